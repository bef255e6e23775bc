package integration

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// seedViews fills db.src with {_id: i, a: i % 3, tag: "t<i%2>"} for i < 10
// and makes two views: big (a > 0, without tag) and bigDesc (big sorted by
// _id descending, on big).
func seedViews(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := testCtx(t)
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: int32(i % 3)}, {Key: "tag", Value: fmt.Sprint("t", i%2)}})
	}
	mustInsert(t, db.Collection("src"), docs...)
	big := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}}}}, {{Key: "$project", Value: bson.D{{Key: "tag", Value: 0}}}}}
	if err := db.CreateView(ctx, "big", "src", big); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateView(ctx, "bigDesc", "big", mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "_id", Value: -1}}}}}); err != nil {
		t.Fatal(err)
	}
}

// idsOf returns a function that reads a cursor's _ids (int32s), in order:
// idsOf(t)(coll.Find(...)).
func idsOf(t *testing.T) func(*mongo.Cursor, error) []int32 {
	return func(cur *mongo.Cursor, err error) []int32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(testCtx(t), &docs); err != nil {
			t.Fatal(err)
		}
		out := []int32{}
		for _, d := range docs {
			out = append(out, d["_id"].(int32))
		}
		return out
	}
}

func TestViewReads(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("vr")
	seedViews(t, db)
	ctx := testCtx(t)

	// find: the filter, sort, skip, limit and projection apply after the
	// view's pipeline.
	got := idsOf(t)(db.Collection("bigDesc").Find(ctx, bson.D{{Key: "a", Value: 1}}))
	if want := []int32{7, 4, 1}; !slices.Equal(got, want) {
		t.Fatalf("find on bigDesc: %v, want %v", got, want)
	}
	got = idsOf(t)(db.Collection("big").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetSkip(1).SetLimit(3)))
	if want := []int32{2, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("find on big with skip and limit: %v, want %v", got, want)
	}
	var one bson.D
	if err := db.Collection("big").FindOne(ctx, bson.D{{Key: "_id", Value: 2}}, options.FindOne().SetProjection(bson.D{{Key: "a", Value: 0}})).Decode(&one); err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || one[0].Key != "_id" {
		t.Fatalf("findOne with projection on big: %v", one)
	}

	// getMore continues a find's and an aggregate's cursor on the view,
	// whose namespace they carry.
	raw := run(t, db, bson.D{{Key: "find", Value: "bigDesc"}, {Key: "batchSize", Value: 2}})
	if ns := raw.Lookup("cursor", "ns").StringValue(); ns != "vr.bigDesc" {
		t.Fatalf("cursor ns %q", ns)
	}
	got = idsOf(t)(db.Collection("bigDesc").Find(ctx, bson.D{}, options.Find().SetBatchSize(2)))
	if want := []int32{8, 7, 5, 4, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("find on bigDesc in batches of 2: %v, want %v", got, want)
	}
	got = idsOf(t)(db.Collection("bigDesc").Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "a", Value: 2}}}}}, options.Aggregate().SetBatchSize(1)))
	if want := []int32{8, 5, 2}; !slices.Equal(got, want) {
		t.Fatalf("aggregate on bigDesc: %v, want %v", got, want)
	}

	// count and distinct apply the pipeline.
	raw = run(t, db, bson.D{{Key: "count", Value: "big"}, {Key: "query", Value: bson.D{{Key: "a", Value: 2}}}, {Key: "skip", Value: 1}})
	if n := raw.Lookup("n").Int32(); n != 2 {
		t.Fatalf("count on big: %d, want 2", n)
	}
	raw = run(t, db, bson.D{{Key: "count", Value: "big"}, {Key: "query", Value: bson.D{{Key: "a", Value: 7}}}})
	if n := raw.Lookup("n").Int32(); n != 0 {
		t.Fatalf("count of nothing on big: %d", n)
	}
	if n := count(t, db.Collection("bigDesc"), bson.D{}); n != 6 {
		t.Fatalf("countDocuments on bigDesc: %d", n)
	}
	res := db.Collection("big").Distinct(ctx, "a", bson.D{})
	var vals []int32
	if err := res.Decode(&vals); err != nil || !slices.Equal(vals, []int32{1, 2}) {
		t.Fatalf("distinct a on big: %v, %v", vals, err)
	}
	if err := db.Collection("big").Distinct(ctx, "tag", bson.D{}).Decode(&vals); err != nil || len(vals) != 0 {
		t.Fatalf("distinct of a field the view projects away: %v, %v", vals, err)
	}

	// A view on a namespace that does not exist is empty.
	if err := db.CreateView(ctx, "ghost", "nothing", mongo.Pipeline{}); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t)(db.Collection("ghost").Find(ctx, bson.D{})); len(got) != 0 {
		t.Fatalf("view on a missing collection: %v", got)
	}
}

func TestViewFindOptionsRefused(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("vf")
	seedViews(t, db)
	ctx := testCtx(t)
	for _, opt := range []bson.E{
		{Key: "min", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "max", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "returnKey", Value: true},
		{Key: "tailable", Value: true},
		{Key: "noCursorTimeout", Value: true},
		{Key: "allowPartialResults", Value: true},
		{Key: "singleBatch", Value: true},
	} {
		err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "big"}, opt}).Err()
		wantCode(t, err, 168)
	}
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "big"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
		{{Key: "aggregate", Value: "big"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
		{{Key: "count", Value: "big"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
		{{Key: "distinct", Value: "big"}, {Key: "key", Value: "a"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}},
	} {
		wantCode(t, db.RunCommand(ctx, cmd).Err(), 167)
	}
	run(t, db, bson.D{{Key: "find", Value: "big"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}})
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "big"}}}}).Err(), 238)
	// A $natural sort is the order of the collection the view reads.
	got := idsOf(t)(db.Collection("big").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "$natural", Value: -1}})))
	if want := []int32{8, 7, 5, 4, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("find on big in $natural order -1: %v, want %v", got, want)
	}
	// singleBatch goes with a limit of one.
	raw := run(t, db, bson.D{{Key: "find", Value: "big"}, {Key: "singleBatch", Value: true}, {Key: "limit", Value: 1}})
	if raw.Lookup("cursor", "id").Int64() != 0 {
		t.Fatalf("singleBatch with limit 1 left a cursor: %s", raw)
	}
	// $collStats reads storage, which a view has none of.
	_, err := db.Collection("big").Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	wantCode(t, err, 166)
}

func TestViewWritesRefused(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("vw")
	seedViews(t, db)
	ctx := testCtx(t)
	big := db.Collection("big")

	_, err := big.InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantCode(t, err, 166)
	_, err = big.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
	wantCode(t, err, 166)
	_, err = big.DeleteMany(ctx, bson.D{})
	wantCode(t, err, 166)
	err = big.FindOneAndDelete(ctx, bson.D{}).Err()
	wantCode(t, err, 166)
	_, err = big.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}})
	wantCode(t, err, 166)
	for _, cmd := range []bson.D{
		{{Key: "listIndexes", Value: "big"}},
		{{Key: "dropIndexes", Value: "big"}, {Key: "index", Value: "*"}},
		{{Key: "validate", Value: "big"}},
		{{Key: "collStats", Value: "big"}},
	} {
		wantCode(t, db.RunCommand(ctx, cmd).Err(), 166)
	}
	// An unordered insert fails document by document.
	_, err = big.InsertMany(ctx, []any{bson.D{}, bson.D{}}, options.InsertMany().SetOrdered(false))
	var we mongo.BulkWriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 2 || we.WriteErrors[1].Code != 166 {
		t.Fatalf("unordered insert into a view: %v", err)
	}

	admin := ts.Client.Database("admin")
	wantCode(t, admin.RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "vw.big"}, {Key: "to", Value: "vw.other"}}).Err(), 166)
	wantCode(t, admin.RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "vw.src"}, {Key: "to", Value: "vw.big"}, {Key: "dropTarget", Value: true}}).Err(), 48)
	wantCode(t, admin.RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "vw.system.views"}, {Key: "to", Value: "vw.x"}}).Err(), 20)
	// Clients do not write system.views.
	_, err = db.Collection("system.views").InsertOne(ctx, bson.D{{Key: "_id", Value: "vw.x"}, {Key: "viewOn", Value: "src"}, {Key: "pipeline", Value: bson.A{}}})
	wantCode(t, err, 73)

	// Nothing was written anywhere.
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if want := []string{"big", "bigDesc", "src", "system.views"}; !slices.Equal(names, want) {
		t.Fatalf("collections %v, want %v", names, want)
	}
}

func TestViewCreateErrors(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("vc")
	seedViews(t, db)
	ctx := testCtx(t)
	create := func(name string, rest ...bson.E) error {
		return db.RunCommand(ctx, append(bson.D{{Key: "create", Value: name}}, rest...)).Err()
	}
	empty := bson.E{Key: "pipeline", Value: bson.A{}}
	// The same definition again is no error in MongoDB 7; another is.
	if err := create("bigDesc", bson.E{Key: "viewOn", Value: "big"}, bson.E{Key: "pipeline", Value: bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: -1}}}}}}); err != nil {
		t.Fatalf("creating the same view again: %v", err)
	}
	wantCode(t, create("bigDesc", bson.E{Key: "viewOn", Value: "src"}, empty), 48)
	wantCode(t, create("src", bson.E{Key: "viewOn", Value: "big"}, empty), 48)
	wantCode(t, create("big"), 48)
	wantCode(t, create("x", empty), 72)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: ""}), 2)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: 1}), 14)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: "src"}, bson.E{Key: "pipeline", Value: bson.D{}}), 14)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: "src"}, bson.E{Key: "validator", Value: bson.D{}}), 72)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: "src"}, bson.E{Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "y"}}}}), 167)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: "src"}, bson.E{Key: "pipeline", Value: bson.A{bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "y"}}}}}}), 167)
	wantCode(t, create("x", bson.E{Key: "viewOn", Value: "src"}, bson.E{Key: "pipeline", Value: bson.A{bson.D{{Key: "$bogus", Value: 1}}}}), 40324)
	wantCode(t, create("big", bson.E{Key: "viewOn", Value: "bigDesc"}, empty), 48)
	wantCode(t, create("loop", bson.E{Key: "viewOn", Value: "loop"}, empty), 5)
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "big"}, {Key: "viewOn", Value: "bigDesc"}}).Err(), 5)
	// A chain of 20 views, and no deeper.
	prev := "src"
	for i := 1; i <= 20; i++ {
		name := fmt.Sprint("chain", i)
		if err := create(name, bson.E{Key: "viewOn", Value: prev}, empty); err != nil {
			t.Fatalf("view %d of the chain: %v", i, err)
		}
		prev = name
	}
	wantCode(t, create("chain21", bson.E{Key: "viewOn", Value: prev}, empty), 165)
}

func TestViewCatalog(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("vl")
	seedViews(t, db)
	ctx := testCtx(t)

	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "type", Value: "view"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "big" || specs[0].Type != "view" || !specs[0].ReadOnly {
		t.Fatalf("views listed: %+v", specs)
	}
	if got := specs[1].Options.Lookup("viewOn").StringValue(); got != "big" {
		t.Fatalf("bigDesc options %s", specs[1].Options)
	}
	if got := specs[0].Options.Lookup("pipeline").String(); got != `[{"$match": {"a": {"$gt": {"$numberInt":"0"}}}},{"$project": {"tag": {"$numberInt":"0"}}}]` {
		t.Fatalf("big's pipeline listed as %s", got)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "type", Value: "view"}}, options.ListCollections().SetNameOnly(true))
	if err != nil || !slices.Equal(names, []string{"big", "bigDesc"}) {
		t.Fatalf("view names %v, %v", names, err)
	}
	names, err = db.ListCollectionNames(ctx, bson.D{{Key: "type", Value: "collection"}})
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"src", "system.views"}) {
		t.Fatalf("collection names %v, %v", names, err)
	}

	// system.views holds the definitions.
	var defs []bson.M
	cur, err := db.Collection("system.views").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err == nil {
		err = cur.All(ctx, &defs)
	}
	if err != nil || len(defs) != 2 || defs[0]["_id"] != "vl.big" || defs[0]["viewOn"] != "src" || defs[1]["viewOn"] != "big" {
		t.Fatalf("system.views: %v, %v", defs, err)
	}
	raw := run(t, db, bson.D{{Key: "dbStats", Value: 1}})
	if n := raw.Lookup("views").AsInt64(); n != 2 {
		t.Fatalf("dbStats views %d", n)
	}

	// collMod changes a view, and survives a restart with it.
	run(t, db, bson.D{{Key: "collMod", Value: "big"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: 0}}}}}}})
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "big"}, {Key: "validator", Value: bson.D{}}}).Err(), 72)
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "src"}, {Key: "viewOn", Value: "big"}}).Err(), 72)
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "nothing"}, {Key: "viewOn", Value: "big"}}).Err(), 26)
	ts.Restart(t)
	db = ts.Client.Database("vl")
	got := idsOf(t)(db.Collection("bigDesc").Find(ctx, bson.D{}))
	if want := []int32{9, 6, 3, 0}; !slices.Equal(got, want) {
		t.Fatalf("after collMod and restart: %v, want %v", got, want)
	}

	// drop drops a view; views on it stay, empty.
	raw = run(t, db, bson.D{{Key: "drop", Value: "big"}})
	if ns := raw.Lookup("ns").StringValue(); ns != "vl.big" {
		t.Fatalf("drop reply %s", raw)
	}
	if got := idsOf(t)(db.Collection("bigDesc").Find(ctx, bson.D{})); len(got) != 0 {
		t.Fatalf("view on a dropped view: %v", got)
	}
	// A collection may take the name now; writes to it are writes again.
	mustInsert(t, db.Collection("big"), bson.D{{Key: "_id", Value: 1}})
	if got := idsOf(t)(db.Collection("bigDesc").Find(ctx, bson.D{})); !slices.Equal(got, []int32{1}) {
		t.Fatalf("view over the new collection: %v", got)
	}
	// dropDatabase takes the views with it.
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if names, _ := db.ListCollectionNames(ctx, bson.D{}); len(names) != 0 {
		t.Fatalf("after dropDatabase: %v", names)
	}
	if err := db.CreateView(ctx, "bigDesc", "src", mongo.Pipeline{}); err != nil {
		t.Fatalf("create a view again after dropDatabase: %v", err)
	}
}
