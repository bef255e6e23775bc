package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestNowInFiltersIsTheServerClock checks that $$NOW in a query's $expr is
// the server's clock when the command runs, in every command that takes a
// filter, as it already is in aggregation stages and update pipelines.
func TestNowInFiltersIsTheServerClock(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	db := ts.Client.Database("test")
	coll := db.Collection("now")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	atEpoch := bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$$NOW", testEpoch}}}}}

	wantIDs(t, coll, atEpoch, 1, 2)
	if n := count(t, coll, atEpoch); n != 2 { // aggregate with $match
		t.Errorf("countDocuments = %d, want 2", n)
	}
	reply := run(t, db, bson.D{{Key: "count", Value: "now"}, {Key: "query", Value: atEpoch}})
	if n := lookup(t, reply, "n").AsInt64(); n != 2 {
		t.Errorf("count = %d, want 2", n)
	}
	vals, err := coll.Distinct(ctx, "_id", atEpoch).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustValues(t, bson.RawValue{Type: bson.TypeArray, Value: vals})); n != 2 {
		t.Errorf("distinct found %d values, want 2", n)
	}
	var found bson.M
	if err := coll.FindOneAndUpdate(ctx, atEpoch, bson.D{{Key: "$set", Value: bson.D{{Key: "f", Value: 1}}}}).Decode(&found); err != nil {
		t.Errorf("findAndModify: %v", err)
	}
	up, err := coll.UpdateMany(ctx, atEpoch, bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: 1}}}})
	if err != nil || up.MatchedCount != 2 {
		t.Errorf("update matched %v (%v), want 2", up, err)
	}
	explain := run(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "now"}, {Key: "filter", Value: atEpoch}}}, {Key: "verbosity", Value: "executionStats"}})
	if n := lookup(t, explain, "executionStats", "nReturned").AsInt64(); n != 2 {
		t.Errorf("explain nReturned = %d, want 2", n)
	}

	names, err := db.ListCollectionNames(ctx, atEpoch)
	if err != nil || len(names) != 1 {
		t.Errorf("listCollections = %v (%v), want [now]", names, err)
	}
	dbs, err := ts.Client.ListDatabaseNames(ctx, atEpoch)
	if err != nil || len(dbs) == 0 {
		t.Errorf("listDatabases = %v (%v), want all", dbs, err)
	}

	// Later, the same filter matches nothing: $$NOW moved with the clock.
	ts.Clock.Advance(time.Hour)
	wantIDs(t, coll, atEpoch)
	later := bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{"$$NOW", testEpoch.Add(time.Hour)}}}}}
	del, err := coll.DeleteMany(ctx, later)
	if err != nil || del.DeletedCount != 2 {
		t.Errorf("delete removed %v (%v), want 2", del, err)
	}
}

// TestNowInValidatorIsTheTimeOfTheWrite checks that a validator using $$NOW
// sees the time of each write, not the time it was created.
func TestNowInValidatorIsTheTimeOfTheWrite(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	db := ts.Client.Database("test")
	notFuture := bson.D{{Key: "$expr", Value: bson.D{{Key: "$lte", Value: bson.A{"$t", "$$NOW"}}}}}
	if err := db.CreateCollection(ctx, "v", options.CreateCollection().SetValidator(notFuture)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("v")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: testEpoch}})
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "t", Value: testEpoch.Add(time.Hour)}})
	wantCode(t, err, 121) // DocumentValidationFailure

	ts.Clock.Advance(2 * time.Hour)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 3}, {Key: "t", Value: testEpoch.Add(time.Hour)}})
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "t", Value: testEpoch.Add(3 * time.Hour)}})
	wantCode(t, err, 121)
}

// openCursor runs a find or aggregate with batchSize 2 on coll, which holds
// more documents, and returns the open cursor's id.
func openCursor(t *testing.T, db *mongo.Database, cmd bson.D) int64 {
	t.Helper()
	reply := run(t, db, cmd)
	id := lookup(t, reply, "cursor", "id").Int64()
	if id == 0 {
		t.Fatalf("%v left no cursor open", cmd)
	}
	return id
}

func fillFive(t *testing.T, db *mongo.Database, coll string) {
	t.Helper()
	for i := range 5 {
		mustInsert(t, db.Collection(coll), bson.D{{Key: "_id", Value: i}})
	}
}

// TestCursorKilledByRenameAwayAndBack checks that a find cursor dies with
// a rename even when the collection is renamed back before the getMore:
// the name is the same, the collection is not the one the plan was for.
func TestCursorKilledByRenameAwayAndBack(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	admin := ts.Client.Database("admin")
	fillFive(t, db, "a")
	id := openCursor(t, db, bson.D{{Key: "find", Value: "a"}, {Key: "batchSize", Value: 2}})
	run(t, admin, bson.D{{Key: "renameCollection", Value: "test.a"}, {Key: "to", Value: "test.b"}})
	run(t, admin, bson.D{{Key: "renameCollection", Value: "test.b"}, {Key: "to", Value: "test.a"}})
	err := db.RunCommand(context.Background(), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "a"}}).Err()
	wantCode(t, err, 175) // QueryPlanKilled
}

// TestCursorKilledByDropAndRecreate checks the same for a collection
// dropped and created again under its name.
func TestCursorKilledByDropAndRecreate(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	fillFive(t, db, "a")
	id := openCursor(t, db, bson.D{{Key: "find", Value: "a"}, {Key: "batchSize", Value: 2}})
	if err := db.Collection("a").Drop(context.Background()); err != nil {
		t.Fatal(err)
	}
	fillFive(t, db, "a")
	err := db.RunCommand(context.Background(), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "a"}}).Err()
	wantCode(t, err, 175)
}

// TestAggregateCursorKilledByDrop checks that an aggregation cursor whose
// pipeline still reads the collection dies when the collection is dropped
// or renamed, as MongoDB's does, while one that read it all before its
// first batch (a $sort without an index) goes on.
func TestAggregateCursorKilledByDrop(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	admin := ts.Client.Database("admin")
	aggregate := func(pipeline bson.A) bson.D {
		return bson.D{{Key: "aggregate", Value: "a"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 2}}}}
	}
	getMore := func(id int64) error {
		return db.RunCommand(context.Background(), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "a"}}).Err()
	}
	streaming := bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: 1}}}}}
	sorted := bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: 1}}}}} // no index on x

	fillFive(t, db, "a")
	plain := openCursor(t, db, aggregate(bson.A{}))
	matched := openCursor(t, db, aggregate(streaming))
	drained := openCursor(t, db, aggregate(sorted))
	if err := db.Collection("a").Drop(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, getMore(plain), 175) // QueryPlanKilled
	wantCode(t, getMore(matched), 175)
	if err := getMore(drained); err != nil {
		t.Errorf("getMore of a $sort pipeline after the drop: %v", err)
	}

	fillFive(t, db, "a")
	renamed := openCursor(t, db, aggregate(bson.A{}))
	run(t, admin, bson.D{{Key: "renameCollection", Value: "test.a"}, {Key: "to", Value: "test.b"}})
	run(t, admin, bson.D{{Key: "renameCollection", Value: "test.b"}, {Key: "to", Value: "test.a"}})
	wantCode(t, getMore(renamed), 175)
}

// TestKillCursorsArguments checks killCursors' arguments against MongoDB's
// parser (kill_cursors.idl): the collection is a string, every cursor id a
// long, and a bad element kills none of the cursors listed.
func TestKillCursorsArguments(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	fillFive(t, db, "a")
	id := openCursor(t, db, bson.D{{Key: "find", Value: "a"}, {Key: "batchSize", Value: 2}})
	for _, tc := range []struct {
		cmd  bson.D
		code int
		msg  string
	}{
		{bson.D{{Key: "killCursors", Value: 1}, {Key: "cursors", Value: bson.A{id}}}, 2, "collection name has invalid type int"},
		{bson.D{{Key: "killCursors", Value: ""}, {Key: "cursors", Value: bson.A{id}}}, 73, "Invalid namespace specified 'test.'"},
		{bson.D{{Key: "killCursors", Value: "a"}, {Key: "cursors", Value: bson.A{id, int32(5)}}}, 14, "BSON field 'killCursors.cursors.1' is the wrong type 'int', expected type 'long'"},
		{bson.D{{Key: "killCursors", Value: "a"}}, 40414, "BSON field 'killCursors.cursors' is missing but a required field"},
	} {
		err := db.RunCommand(context.Background(), tc.cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || int(ce.Code) != tc.code || !strings.Contains(ce.Message, tc.msg) {
			t.Errorf("%v: got %v, want code %d %q", tc.cmd, err, tc.code, tc.msg)
		}
	}
	// The refused commands left the cursor open.
	if err := db.RunCommand(context.Background(), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "a"}}).Err(); err != nil {
		t.Errorf("getMore after refused killCursors: %v", err)
	}
}

// TestCursorSurvivesCatalogChangesAfterRename checks that a cursor opened
// on a renamed collection lives through index builds and collMod, which
// kill no plan that does not use a dropped index.
func TestCursorSurvivesCatalogChangesAfterRename(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	db := ts.Client.Database("test")
	admin := ts.Client.Database("admin")
	fillFive(t, db, "a")
	run(t, admin, bson.D{{Key: "renameCollection", Value: "test.a"}, {Key: "to", Value: "test.b"}})
	find := openCursor(t, db, bson.D{{Key: "find", Value: "b"}, {Key: "batchSize", Value: 1}})
	agg := openCursor(t, db, bson.D{{Key: "aggregate", Value: "b"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}})
	if _, err := db.Collection("b").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	run(t, db, bson.D{{Key: "collMod", Value: "b"}, {Key: "validationLevel", Value: "moderate"}})
	for _, id := range []int64{find, agg} {
		if err := db.RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "b"}}).Err(); err != nil {
			t.Errorf("getMore after createIndexes and collMod: %v", err)
		}
	}
}
