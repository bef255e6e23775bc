package integration

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// createIndex runs createIndexes with one spec. A spec without a name gets
// the name drivers derive from the key pattern (field_direction joined by
// "_"), since the server requires one.
func createIndex(t *testing.T, coll *mongo.Collection, spec bson.D) bson.Raw {
	t.Helper()
	return run(t, coll.Database(), bson.D{{Key: "createIndexes", Value: coll.Name()}, {Key: "indexes", Value: bson.A{named(spec)}}})
}

// named returns spec with the driver's default name when it has none.
func named(spec bson.D) bson.D {
	var key bson.D
	for _, e := range spec {
		switch e.Key {
		case "name":
			return spec
		case "key":
			key, _ = e.Value.(bson.D)
		}
	}
	parts := make([]string, 0, len(key))
	for _, k := range key {
		parts = append(parts, fmt.Sprintf("%s_%v", k.Key, k.Value))
	}
	return append(slices.Clone(spec), bson.E{Key: "name", Value: strings.Join(parts, "_")})
}

func listIndexes(t *testing.T, coll *mongo.Collection) []bson.Raw {
	t.Helper()
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	return specs
}

func TestCreateListDropIndexes(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("ix").Collection("c")
	r := createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}})
	if r.Lookup("numIndexesBefore").Int32() != 1 || r.Lookup("numIndexesAfter").Int32() != 2 || !r.Lookup("createdCollectionAutomatically").Boolean() {
		t.Fatalf("reply %v", r)
	}
	r = createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}})
	if note, _ := r.Lookup("note").StringValueOK(); note != "all indexes already exist" {
		t.Fatalf("repeat reply %v", r)
	}
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "uniq"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}})
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: 1}}}, {Key: "partialFilterExpression", Value: bson.D{{Key: "p", Value: bson.D{{Key: "$gt", Value: 5}}}}}})
	specs := listIndexes(t, coll)
	if len(specs) != 4 {
		t.Fatalf("listIndexes %v", specs)
	}
	if specs[0].Lookup("name").StringValue() != "_id_" || specs[1].Lookup("name").StringValue() != "a_1_b_-1" {
		t.Fatalf("names %v", specs)
	}
	if !specs[2].Lookup("unique").Boolean() || !specs[2].Lookup("sparse").Boolean() || specs[3].Lookup("partialFilterExpression").Type == 0 {
		t.Fatalf("options %v", specs)
	}
	// Same name, other key: 86; same key, other name: 85.
	_, err := coll.Database().RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "z", Value: 1}}}, {Key: "name", Value: "uniq"}}}}}).Raw()
	wantCode(t, err, 86)
	_, err = coll.Database().RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "other"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}}}}}).Raw()
	wantCode(t, err, 85)
	_, err = coll.Database().RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "q", Value: 1}}}, {Key: "bogus", Value: 1}}}}}).Raw()
	wantCode(t, err, 197)
	// dropIndexes by name, by key pattern, by list, and "*".
	run(t, coll.Database(), bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "uniq"}})
	run(t, coll.Database(), bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.D{{Key: "p", Value: 1}}}})
	_, err = coll.Database().RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "nope"}}).Raw()
	wantCode(t, err, 27)
	_, err = coll.Database().RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "_id_"}}).Raw()
	wantCode(t, err, 72)
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}})
	run(t, coll.Database(), bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.A{"x_1"}}})
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "y", Value: 1}}}})
	r = run(t, coll.Database(), bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "*"}})
	if r.Lookup("nIndexesWas").Int32() != 3 || len(listIndexes(t, coll)) != 1 {
		t.Fatalf("drop * %v", r)
	}
}

func TestUniqueIndexes(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("ix").Collection("u")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "a@x"}}, bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "a@x"}})
	// A unique build over duplicates fails and leaves no index behind.
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)})
	wantCode(t, err, 11000)
	if n := len(listIndexes(t, coll)); n != 1 {
		t.Fatalf("%d indexes after failed build", n)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "email", Value: "a@x"}})
	wantCode(t, err, 11000)
	var we mongo.WriteException
	if !asWriteException(err, &we) || we.WriteErrors[0].Raw.Lookup("keyPattern", "email").Type == 0 || we.WriteErrors[0].Raw.Lookup("keyValue", "email").StringValue() != "a@x" {
		t.Fatalf("duplicate error lacks keyPattern/keyValue: %v", err)
	}
	// Updating into a taken key fails too; moving off it frees it.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 4}, {Key: "email", Value: "b@x"}})
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "a@x"}}}})
	wantCode(t, err, 11000)
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "c@x"}}}}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 5}, {Key: "email", Value: "a@x"}})
	// Concurrent inserts of one key: exactly one wins.
	for round := 0; round < 10; round++ {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000*round + i + 100}, {Key: "email", Value: fmt.Sprintf("r%d", round)}})
				if err == nil {
					wins.Add(1)
				} else if errCode(err) != 11000 {
					t.Errorf("unexpected %v", err)
				}
			}(i)
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
	}
}

func asWriteException(err error, we *mongo.WriteException) bool {
	e, ok := err.(mongo.WriteException)
	if ok {
		*we = e
	}
	return ok
}

func TestMultikeySparsePartial(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("ix").Collection("m")
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags"}})
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s"}, {Key: "sparse", Value: true}, {Key: "unique", Value: true}})
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"red", "blue"}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "tags", Value: bson.A{"blue"}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "tags", Value: "red"}},
		bson.D{{Key: "_id", Value: 4}, {Key: "tags", Value: bson.A{5, 15}}},
		bson.D{{Key: "_id", Value: 5}},
		bson.D{{Key: "_id", Value: 6}},
	)
	wantIDs(t, coll, bson.D{{Key: "tags", Value: "red"}}, 1, 3)
	wantIDs(t, coll, bson.D{{Key: "tags", Value: "blue"}}, 1, 2)
	// Each bound may be met by a different element of a multikey array.
	wantIDs(t, coll, bson.D{{Key: "tags", Value: bson.D{{Key: "$gt", Value: 10}, {Key: "$lt", Value: 10}}}}, 4)
	wantIDs(t, coll, bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{"red", "blue"}}}}}, 1, 2, 3)
	// Sparse unique: many documents without the field are fine.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 7}, {Key: "s", Value: 1}})
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 8}, {Key: "s", Value: 1}})
	wantCode(t, err, 11000)
	wantIDs(t, coll, bson.D{{Key: "s", Value: nil}}, 1, 2, 3, 4, 5, 6)
}

// explainOf runs explain with executionStats on a find.
func explainOf(t *testing.T, coll *mongo.Collection, find bson.D) bson.Raw {
	t.Helper()
	return run(t, coll.Database(), bson.D{{Key: "explain", Value: append(bson.D{{Key: "find", Value: coll.Name()}}, find...)}, {Key: "verbosity", Value: "executionStats"}})
}

func stageOf(plan bson.Raw) string {
	for plan != nil {
		st := plan.Lookup("stage").StringValue()
		if st != "FETCH" && st != "SORT" {
			return st
		}
		plan, _ = plan.Lookup("inputStage").DocumentOK()
	}
	return ""
}

func TestPlannerAndExplain(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("ix").Collection("p")
	var docs []any
	for i := 0; i < 1000; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 100)}, {Key: "b", Value: int32(i)}})
	}
	mustInsert(t, coll, docs...)
	ex := explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: 7}}}})
	if stageOf(ex.Lookup("queryPlanner", "winningPlan").Document()) != "COLLSCAN" {
		t.Fatalf("no index: %v", ex.Lookup("queryPlanner"))
	}
	if n, _ := ex.Lookup("executionStats", "totalDocsExamined").AsInt64OK(); n != 1000 {
		t.Fatalf("collection scan examined %d docs", n)
	}
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}, {Key: "name", Value: "a_b"}})
	ex = explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: 7}}}})
	plan := ex.Lookup("queryPlanner", "winningPlan").Document()
	if stageOf(plan) != "IXSCAN" || plan.Lookup("inputStage", "indexName").StringValue() != "a_b" {
		t.Fatalf("indexed equality: %v", plan)
	}
	keys, _ := ex.Lookup("executionStats", "totalKeysExamined").AsInt64OK()
	nret, _ := ex.Lookup("executionStats", "nReturned").AsInt64OK()
	if nret != 10 || keys != 10 {
		t.Fatalf("indexed equality returned %d, examined %d keys; want 10 and 10", nret, keys)
	}
	// Compound prefix with a range on the second field.
	ex = explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: 7}, {Key: "b", Value: bson.D{{Key: "$gte", Value: 500}}}}}})
	keys, _ = ex.Lookup("executionStats", "totalKeysExamined").AsInt64OK()
	nret, _ = ex.Lookup("executionStats", "nReturned").AsInt64OK()
	if nret != 5 || keys != 5 {
		t.Fatalf("prefix+range returned %d examined %d", nret, keys)
	}
	// $in.
	ex = explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}}})
	if n, _ := ex.Lookup("executionStats", "nReturned").AsInt64OK(); n != 20 || stageOf(ex.Lookup("queryPlanner", "winningPlan").Document()) != "IXSCAN" {
		t.Fatalf("$in: %v", ex.Lookup("executionStats"))
	}
	// _id point read.
	ex = explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}}})
	if stageOf(ex.Lookup("queryPlanner", "winningPlan").Document()) != "IDHACK" {
		t.Fatalf("_id: %v", ex.Lookup("queryPlanner"))
	}
	// Sort by the index: no SORT stage; by another field: SORT.
	ex = explainOf(t, coll, bson.D{{Key: "sort", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}, {Key: "limit", Value: 3}})
	if ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue() == "SORT" {
		t.Fatalf("index sort: %v", ex.Lookup("queryPlanner"))
	}
	ex = explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: 3}}}, {Key: "sort", Value: bson.D{{Key: "b", Value: -1}}}})
	if ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue() != "SORT" {
		t.Fatalf("blocking sort: %v", ex.Lookup("queryPlanner"))
	}
	// Hint forces the plan; a bad hint is an error.
	ex = explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: 7}}}, {Key: "hint", Value: bson.D{{Key: "$natural", Value: 1}}}})
	if stageOf(ex.Lookup("queryPlanner", "winningPlan").Document()) != "COLLSCAN" {
		t.Fatalf("$natural hint: %v", ex.Lookup("queryPlanner"))
	}
	_, err := coll.Find(ctx, bson.D{}, options.Find().SetHint("nope"))
	wantCode(t, err, 2)
	// Results are the same whichever plan runs.
	for _, hint := range []any{"a_b", bson.D{{Key: "$natural", Value: 1}}} {
		cur, err := coll.Find(ctx, bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 98}}}}, options.Find().SetHint(hint).SetSort(bson.D{{Key: "b", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.M
		if err := cur.All(ctx, &got); err != nil || len(got) != 20 || got[0]["b"] != int32(98) || got[19]["b"] != int32(999) {
			t.Fatalf("hint %v: %d docs %v", hint, len(got), err)
		}
	}
	// explain of count, update, delete, aggregate.
	for _, inner := range []bson.D{
		{{Key: "count", Value: "p"}, {Key: "query", Value: bson.D{{Key: "a", Value: 1}}}},
		{{Key: "update", Value: "p"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "z", Value: 1}}}}}}}}},
		{{Key: "delete", Value: "p"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "limit", Value: 0}}}}},
		{{Key: "aggregate", Value: "p"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 1}}}}}}, {Key: "cursor", Value: bson.D{}}},
	} {
		ex := run(t, coll.Database(), bson.D{{Key: "explain", Value: inner}})
		if stageOf(ex.Lookup("queryPlanner", "winningPlan").Document()) != "IXSCAN" {
			t.Fatalf("explain %v: %v", inner[0].Key, ex.Lookup("queryPlanner"))
		}
	}
	if n := count(t, coll, bson.D{{Key: "z", Value: 1}}); n != 0 {
		t.Fatalf("explain of update modified %d documents", n)
	}
}

func TestHiddenIndexIsNotUsed(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("ix").Collection("h")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}, {Key: "hidden", Value: true}})
	if specs := listIndexes(t, coll); !specs[1].Lookup("hidden").Boolean() {
		t.Fatalf("listIndexes %v", specs[1])
	}
	plan := func() string {
		ex := explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a", Value: 1}}}})
		return stageOf(ex.Lookup("queryPlanner", "winningPlan").Document())
	}
	if got := plan(); got != "COLLSCAN" {
		t.Fatalf("hidden index used: %s", got)
	}
	r := run(t, coll.Database(), bson.D{{Key: "collMod", Value: "h"}, {Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: false}}}})
	if !r.Lookup("hidden_old").Boolean() || r.Lookup("hidden_new").Boolean() {
		t.Fatalf("collMod reply %v", r)
	}
	if got := plan(); got != "IXSCAN" {
		t.Fatalf("unhidden index not used: %s", got)
	}
	wantIDs(t, coll, bson.D{{Key: "a", Value: 1}}, 1)
}
