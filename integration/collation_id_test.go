package integration

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCollatedIDIndex runs jstests/core/collation.js's _id cases through
// the Go driver on a collection created with {locale: "en_US", strength:
// 2}, whose _id index has that collation (jstests/core/index_id_options.js:
// "_id indexes must have the collection default collation"): "FOO" after
// "foo" is a duplicate key (11000, with keyPattern and keyValue), also
// after a restart; find, count, update, delete and findAndModify by _id
// match under the collation, and under {locale: "simple"} bytewise,
// without the _id index ("Find on _id should not use idhack stage when
// query collation does not match collection default"), and a find by _id
// under a coarser collation than a collection's finds every document it
// matches, not one point; listIndexes and
// listCollections show the collation on the _id index.
func TestCollatedIDIndex(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("collid")
	ci := &options.Collation{Locale: "en_US", Strength: 2}
	simple := &options.Collation{Locale: "simple"}
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCollation(ci)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: "foo"}, {Key: "n", Value: 0}})
	wantDup := func(what string, err error) {
		t.Helper()
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 11000 {
			t.Fatalf("%s: %v, want a duplicate key error (11000)", what, err)
		}
		info := we.WriteErrors[0].Raw
		if p, err := info.LookupErr("keyPattern", "_id"); err != nil || p.AsInt64() != 1 {
			t.Errorf("%s: %s, want keyPattern {_id: 1}", what, info)
		}
		if v, err := info.LookupErr("keyValue", "_id"); err != nil || v.StringValue() != "FOO" {
			t.Errorf("%s: %s, want keyValue {_id: \"FOO\"}", what, info)
		}
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "FOO"}})
	wantDup("insert FOO after foo", err)

	byID := bson.D{{Key: "_id", Value: "FOO"}}
	if n := count(t, coll, byID); n != 1 {
		t.Errorf("count {_id: FOO}: %d, want 1", n)
	}
	var got bson.M
	if err := coll.FindOne(ctx, byID).Decode(&got); err != nil || got["_id"] != "foo" {
		t.Errorf("findOne {_id: FOO}: %v %v, want foo", got, err)
	}
	if err := coll.FindOne(ctx, byID, options.FindOne().SetCollation(simple)).Err(); !errors.Is(err, mongo.ErrNoDocuments) {
		t.Errorf("findOne {_id: FOO} under the simple collation: %v, want no document", err)
	}
	stage := func(filter bson.D, coll *options.Collation) string {
		t.Helper()
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}
		if coll != nil {
			cmd = append(cmd, bson.E{Key: "collation", Value: coll})
		}
		ex := run(t, db, bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "queryPlanner"}})
		return ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue()
	}
	if s := stage(byID, nil); s != "IDHACK" {
		t.Errorf("explain {_id: FOO}: %s, want IDHACK", s)
	}
	if s := stage(byID, simple); s != "COLLSCAN" {
		t.Errorf("explain {_id: FOO} under the simple collation: %s, want COLLSCAN", s)
	}

	up, err := coll.UpdateOne(ctx, byID, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if err != nil || up.MatchedCount != 1 {
		t.Errorf("updateOne {_id: FOO}: %+v %v, want 1 matched", up, err)
	}
	_, err = coll.UpdateOne(ctx, byID, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetUpsert(true).SetCollation(simple))
	wantDup("upsert {_id: FOO} under the simple collation", err)
	var fam bson.M
	err = coll.FindOneAndUpdate(ctx, byID, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&fam)
	if err != nil || fam["n"] != int32(2) {
		t.Errorf("findOneAndUpdate {_id: FOO}: %v %v, want foo with n 2", fam, err)
	}
	if del, err := coll.DeleteOne(ctx, byID, options.DeleteOne().SetCollation(simple)); err != nil || del.DeletedCount != 0 {
		t.Errorf("deleteOne {_id: FOO} under the simple collation: %+v %v, want none", del, err)
	}

	// jstests/core/collation.js, "Find on _id should return correct
	// results when query collation differs from collection default
	// collation": both of a case-sensitive collection's foo and FOO.
	if err := db.CreateCollection(ctx, "cs", options.CreateCollection().SetCollation(&options.Collation{Locale: "en_US", Strength: 3})); err != nil {
		t.Fatal(err)
	}
	cs := db.Collection("cs")
	mustInsert(t, cs, bson.D{{Key: "_id", Value: "foo"}}, bson.D{{Key: "_id", Value: "FOO"}})
	found, err := cs.Find(ctx, bson.D{{Key: "_id", Value: "foo"}}, options.Find().SetCollation(ci))
	var both []bson.Raw
	if err == nil {
		err = found.All(ctx, &both)
	}
	if err != nil || len(both) != 2 {
		t.Errorf("find {_id: foo} under strength 2 on a strength 3 collection: %v %v, want foo and FOO", both, err)
	}

	wantIDCollation := func(what string, spec bson.Raw) {
		t.Helper()
		if s, err := spec.LookupErr("collation", "strength"); err != nil || s.AsInt64() != 2 {
			t.Errorf("%s: %s, want the collection's collation", what, spec)
		}
	}
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil || len(specs) != 1 {
		t.Fatal(specs, err)
	}
	wantIDCollation("listIndexes _id_", specs[0])
	infos := run(t, db, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "c"}}}})
	wantIDCollation("listCollections idIndex", infos.Lookup("cursor", "firstBatch", "0", "idIndex").Document())

	// The catalog keeps the _id index's collation across a restart.
	ts.Restart(t)
	coll = ts.Client.Database("collid").Collection("c")
	_, err = coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: "FOO"}})
	wantDup("insert FOO after foo, restarted", err)
	if del, err := coll.DeleteOne(testCtx(t), byID); err != nil || del.DeletedCount != 1 {
		t.Errorf("deleteOne {_id: FOO} after a restart: %+v %v, want foo deleted", del, err)
	}
}
