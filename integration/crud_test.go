package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestInsertAndFindByID(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("people")
	res, err := coll.InsertOne(ctx, bson.D{{Key: "name", Value: "ada"}, {Key: "age", Value: 36}})
	if err != nil {
		t.Fatal(err)
	}
	oid, ok := res.InsertedID.(bson.ObjectID)
	if !ok {
		t.Fatalf("generated _id is %T", res.InsertedID)
	}
	var got bson.Raw
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: oid}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	first, _ := got.IndexErr(0)
	if first.Key() != "_id" || got.Lookup("name").StringValue() != "ada" {
		t.Fatalf("stored %v", got)
	}
	// _id moves to the front.
	mustInsert(t, coll, bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: 7}})
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 7}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if first, _ := got.IndexErr(0); first.Key() != "_id" {
		t.Fatalf("_id not first: %v", got)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: bson.A{1, 2}}})
	wantCode(t, err, 53) // InvalidIdField
}

func TestInsertErrors(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	wantCode(t, err, 11000)
	var we mongo.WriteException
	if !errors.As(err, &we) || !strings.Contains(we.WriteErrors[0].Message, "dup key") {
		t.Fatalf("duplicate message: %v", err)
	}
	raw := we.WriteErrors[0].Raw
	if kv := raw.Lookup("keyValue", "_id"); kv.Type == 0 {
		t.Fatalf("duplicate key error without keyValue: %v", raw)
	}
	// Unordered bulk: every good document lands, every bad one is reported.
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 2}},
		bson.D{{Key: "_id", Value: 1}},
		bson.D{{Key: "_id", Value: 3}},
		bson.D{{Key: "_id", Value: 2}},
		bson.D{{Key: "_id", Value: 4}},
	}, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 2 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[1].Index != 3 {
		t.Fatalf("unordered bulk: %v", err)
	}
	wantIDs(t, coll, bson.D{}, 1, 2, 3, 4)
	// Ordered: stops at the first failure.
	_, err = coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 5}}, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 6}}})
	wantCode(t, err, 11000)
	wantIDs(t, coll, bson.D{}, 1, 2, 3, 4, 5)
	// Bad namespaces.
	for _, name := range []string{"", "a$b", "x\x00y"} {
		_, err := ts.Client.Database("app").Collection(name).InsertOne(ctx, bson.D{})
		wantCode(t, err, 73)
	}
	_, err = ts.Client.Database("bad.db").Collection("c").InsertOne(ctx, bson.D{})
	wantCode(t, err, 73)
	// Oversized document.
	big := strings.Repeat("x", 16*1024*1024)
	_, err = coll.InsertOne(ctx, bson.D{{Key: "s", Value: big}})
	if err == nil {
		t.Fatal("16 MiB document accepted")
	}
}

func TestConcurrentDuplicateIDOneWins(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("race")
	for round := 0; round < 20; round++ {
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: round}}); err == nil {
					wins.Add(1)
				} else if errCode(err) != 11000 {
					t.Errorf("unexpected error %v", err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d inserts of one _id succeeded", round, wins.Load())
		}
	}
}

func TestFindOptionsAndCursors(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("many")
	const n = 10000
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: int32(n - i)}, {Key: "even", Value: i%2 == 0}}
	}
	mustInsert(t, coll, docs...)
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(500))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for cur.Next(ctx) {
		if got := cur.Current.Lookup("_id").Int32(); got != int32(seen) {
			t.Fatalf("document %d has _id %d", seen, got)
		}
		seen++
	}
	if cur.Err() != nil || seen != n {
		t.Fatalf("cursor read %d docs, err %v", seen, cur.Err())
	}
	// Sort, skip, limit, projection.
	cur, err = coll.Find(ctx, bson.D{{Key: "even", Value: true}}, options.Find().
		SetSort(bson.D{{Key: "v", Value: 1}}).SetSkip(2).SetLimit(3).SetProjection(bson.D{{Key: "v", Value: 1}, {Key: "_id", Value: 0}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.D
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0]) != 1 || got[0][0].Value != int32(6) || got[1][0].Value != int32(8) || got[2][0].Value != int32(10) {
		t.Fatalf("sorted page: %v", got)
	}
	// A killed cursor is gone.
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	id := cur.ID()
	if err := cur.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = coll.Database().RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "many"}}).Raw()
	wantCode(t, err, 43)
}

func TestUpdateDeleteAndFindAndModify(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("u")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}, {Key: "tags", Value: bson.A{"a"}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: 3}},
	)
	res, err := coll.UpdateMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 2}}}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}})
	if err != nil || res.MatchedCount != 2 || res.ModifiedCount != 2 {
		t.Fatalf("updateMany %+v %v", res, err)
	}
	wantIDs(t, coll, bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 10}}}}, 2, 3)
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$push", Value: bson.D{{Key: "tags", Value: "b"}}}, {Key: "$set", Value: bson.D{{Key: "x.y", Value: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || fmt.Sprint(doc["tags"]) != "[a b]" {
		t.Fatalf("after $push: %v %v", doc, err)
	}
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 9}}}})
	wantCode(t, err, 66)
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "name", Value: "new"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 0}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || res.UpsertedCount != 1 || res.UpsertedID == nil {
		t.Fatalf("upsert %+v %v", res, err)
	}
	if count(t, coll, bson.D{{Key: "name", Value: "new"}, {Key: "n", Value: 0}}) != 1 {
		t.Fatal("upserted document missing")
	}
	// Replacement.
	if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "r", Value: true}}); err != nil {
		t.Fatal(err)
	}
	doc = nil
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Decode(&doc); err != nil || doc["r"] != true || doc["n"] != nil {
		t.Fatalf("after replace %v %v", doc, err)
	}
	// findAndModify: sort picks the document, new returns the result.
	var after bson.M
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$exists", Value: true}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "picked", Value: true}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "n", Value: -1}}).SetReturnDocument(options.After)).Decode(&after)
	if err != nil || after["_id"] != int32(3) || after["picked"] != true {
		t.Fatalf("findOneAndUpdate %v %v", after, err)
	}
	var removed bson.M
	if err := coll.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: 3}}).Decode(&removed); err != nil || removed["picked"] != true {
		t.Fatalf("findOneAndDelete %v %v", removed, err)
	}
	del, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}})
	if err != nil || del.DeletedCount != 2 {
		t.Fatalf("deleteMany %+v %v", del, err)
	}
	if n := count(t, coll, bson.D{}); n != 1 {
		t.Fatalf("left %d", n)
	}
}

func TestCountDistinctAggregate(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("agg")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "city", Value: "Paris"}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: 2}, {Key: "city", Value: "Oslo"}, {Key: "n", Value: 3}},
		bson.D{{Key: "_id", Value: 3}, {Key: "city", Value: "Paris"}, {Key: "n", Value: 5}},
	)
	if n := count(t, coll, bson.D{{Key: "city", Value: "Paris"}}); n != 2 {
		t.Fatalf("countDocuments %d", n)
	}
	reply := run(t, coll.Database(), bson.D{{Key: "count", Value: "agg"}, {Key: "query", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 2}}}}}})
	if reply.Lookup("n").Int32() != 2 {
		t.Fatalf("count %v", reply)
	}
	var cities []string
	if err := coll.Distinct(ctx, "city", bson.D{}).Decode(&cities); err != nil || fmt.Sprint(cities) != "[Oslo Paris]" {
		t.Fatalf("distinct %v %v", cities, err)
	}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 2}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$city"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$n"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var groups []struct {
		ID    string `bson:"_id"`
		Total int32  `bson:"total"`
	}
	if err := cur.All(ctx, &groups); err != nil || fmt.Sprint(groups) != "[{Oslo 3} {Paris 7}]" {
		t.Fatalf("group %v %v", groups, err)
	}
}

func TestCollectionsAndDatabases(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("shop")
	run(t, db, bson.D{{Key: "create", Value: "orders"}})
	// Creating it again with the same options is no error; with other
	// options it is NamespaceExists (create_collection.cpp,
	// checkCollectionOptions; issue 17, item 6).
	run(t, db, bson.D{{Key: "create", Value: "orders"}})
	_, err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "orders"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}}).Raw()
	wantCode(t, err, 48)
	mustInsert(t, db.Collection("items"), bson.D{{Key: "_id", Value: 1}})
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || fmt.Sprint(names) != "[items orders]" {
		t.Fatalf("listCollections %v %v", names, err)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "items"}})
	if err != nil || len(specs) != 1 || specs[0].UUID == nil || specs[0].IDIndex.Name != "_id_" {
		t.Fatalf("listCollections specs %+v %v", specs, err)
	}
	dbs, err := ts.Client.ListDatabaseNames(ctx, bson.D{})
	if err != nil || !strings.Contains(fmt.Sprint(dbs), "shop") {
		t.Fatalf("listDatabases %v %v", dbs, err)
	}
	run(t, ts.Client.Database("admin"), bson.D{{Key: "renameCollection", Value: "shop.items"}, {Key: "to", Value: "shop.things"}})
	wantIDs(t, db.Collection("things"), bson.D{}, 1)
	stats := run(t, db, bson.D{{Key: "collStats", Value: "things"}})
	if n, _ := stats.Lookup("count").AsInt64OK(); n != 1 {
		t.Fatalf("collStats %v", stats)
	}
	run(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if v := run(t, db, bson.D{{Key: "validate", Value: "things"}}); !v.Lookup("valid").Boolean() {
		t.Fatalf("validate %v", v)
	}
	if err := db.Collection("things").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, db.Collection("things"), bson.D{})
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ = db.ListCollectionNames(ctx, bson.D{})
	if len(names) != 0 {
		t.Fatalf("after dropDatabase: %v", names)
	}
}

func TestRestartKeepsData(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("durable")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "x"}})
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	ts.Restart(t)
	coll = ts.Client.Database("app").Collection("durable")
	wantIDs(t, coll, bson.D{{Key: "a", Value: "x"}}, 1)
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: "x"}})
	wantCode(t, err, 11000)
}

func TestWrongTypesAndUnknownFields(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("app")
	_, err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: "x"}}).Raw()
	wantCode(t, err, 14)
	_, err = db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "bogus", Value: 1}}).Raw()
	wantCode(t, err, 40415)
	_, err = db.RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: 5}}).Raw()
	wantCode(t, err, 14)
	_, err = db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$bogus", Value: 1}}}}}}).Raw()
	wantCode(t, err, 2)
}

func TestNaturalOrder(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("nat")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 3}})
	for dir, want := range map[int]string{1: "[1 2 3]", -1: "[3 2 1]"} {
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "$natural", Value: dir}}))
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		for cur.Next(ctx) {
			got = append(got, cur.Current.Lookup("_id").Int32())
		}
		if fmt.Sprint(got) != want {
			t.Errorf("$natural %d: %v, want %s", dir, got, want)
		}
	}
}

func TestUpdatePipelineAndAggregateStages(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("pipe")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "first", Value: "Ada"}, {Key: "last", Value: "Lovelace"}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: 2}, {Key: "first", Value: "Alan"}, {Key: "last", Value: "Turing"}, {Key: "n", Value: 5}},
	)
	res, err := coll.UpdateMany(ctx, bson.D{}, mongo.Pipeline{
		{{Key: "$set", Value: bson.D{{Key: "full", Value: bson.D{{Key: "$concat", Value: bson.A{"$first", " ", "$last"}}}}}}},
		{{Key: "$unset", Value: bson.A{"first", "last"}}},
	})
	if err != nil || res.ModifiedCount != 2 {
		t.Fatalf("pipeline update: %+v %v", res, err)
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Decode(&doc); err != nil || doc["full"] != "Alan Turing" || doc["first"] != nil {
		t.Fatalf("after pipeline update: %v %v", doc, err)
	}
	_, err = coll.UpdateOne(ctx, bson.D{}, mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}})
	wantCode(t, err, 72)
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$addFields", Value: bson.D{{Key: "double", Value: bson.D{{Key: "$multiply", Value: bson.A{"$n", 2}}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: bson.A{"$n", 3}}}}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$double"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "big", Value: "$_id"}, {Key: "total", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Big   bool  `bson:"big"`
		Total int32 `bson:"total"`
	}
	if err := cur.All(ctx, &got); err != nil || fmt.Sprint(got) != "[{false 4} {true 10}]" {
		t.Fatalf("aggregate: %v %v", got, err)
	}
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$replaceWith", Value: bson.D{{Key: "name", Value: "$full"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []bson.M
	if err := cur.All(ctx, &names); err != nil || len(names) != 2 || names[0]["name"] != "Ada Lovelace" || len(names[0]) != 1 {
		t.Fatalf("$replaceWith: %v %v", names, err)
	}
}

func TestShellHelperCommands(t *testing.T) {
	ts := startServer(t)
	admin := ts.Client.Database("admin")
	db := ts.Client.Database("app")
	if r := run(t, db, bson.D{{Key: "usersInfo", Value: 1}}); len(mustValues(t, r.Lookup("users"))) != 0 {
		t.Fatalf("usersInfo %v", r)
	}
	run(t, db, bson.D{{Key: "rolesInfo", Value: 1}})
	_, err := admin.RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Raw()
	wantCode(t, err, 76)
	// The only operation running is the aggregate itself, but for the
	// driver's monitors, whose hellos may be caught running.
	cur, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}, notMonitorHello})
	if err != nil {
		t.Fatalf("$currentOp: %v", err)
	}
	aggregates := 0
	for cur.Next(ctx) {
		if cur.Current.Lookup("command", "aggregate").Type == 0 {
			t.Errorf("$currentOp lists %v", cur.Current)
			continue
		}
		aggregates++
	}
	if aggregates != 1 {
		t.Errorf("$currentOp lists %d aggregates, want 1", aggregates)
	}
	mustInsert(t, db.Collection("s"), bson.D{{Key: "_id", Value: 1}})
	cur, err = db.Collection("s").Aggregate(ctx, mongo.Pipeline{
		{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}},
		{{Key: "$project", Value: bson.D{{Key: "n", Value: "$storageStats.count"}}}},
	})
	if err != nil || !cur.Next(ctx) || cur.Current.Lookup("n").Int64() != 1 {
		t.Fatalf("$collStats then $project: %v %v", err, cur.Current)
	}
}

func mustValues(t *testing.T, v bson.RawValue) []bson.RawValue {
	t.Helper()
	arr, ok := v.ArrayOK()
	if !ok {
		t.Fatalf("not an array: %v", v)
	}
	vals, _ := arr.Values()
	return vals
}
