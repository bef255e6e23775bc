package integration

import (
	"context"
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
)

// Tests of ../shared/spec/ttl.md, one or more per numbered rule. The clock
// is the test server's manual clock: expiry is driven, never waited for.

var ctx = context.Background()

const ms = time.Millisecond

// enableTTL creates the _ts TTL index with the given default.
func enableTTL(t *testing.T, coll *mongo.Collection, seconds any) bson.Raw {
	t.Helper()
	return run(t, coll.Database(), bson.D{
		{Key: "createIndexes", Value: coll.Name()},
		{Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: seconds}}}},
	})
}

func ttlColl(t *testing.T, ts *testServer, name string) *mongo.Collection {
	return ts.Client.Database("ttl").Collection(name)
}

func TestRule01TimestampDrivesExpiry(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	ts.Clock.Advance(5 * time.Second)
	// Every kind of write moves _ts: replace, update, upsert, findAndModify.
	if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "v", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	ts.Clock.Advance(10*time.Second - ms)
	wantIDs(t, coll, bson.D{}, 1)
	ts.Clock.Advance(ms)
	wantIDs(t, coll, bson.D{})

	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	ts.Clock.Advance(9 * time.Second)
	if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	ts.Clock.Advance(9 * time.Second)
	wantIDs(t, coll, bson.D{}, 2)
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}, options.UpdateOne().SetUpsert(true)); err != nil {
		t.Fatal(err)
	}
	ts.Clock.Advance(1 * time.Second)
	wantIDs(t, coll, bson.D{}, 3)
	ts.Clock.Advance(9 * time.Second)
	wantIDs(t, coll, bson.D{})
}

func TestRule02TimestampIsNeverReturned(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 100)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["_ts"]; ok {
		t.Fatalf("find returned _ts: %v", doc)
	}
	doc = nil
	if err := coll.FindOne(ctx, bson.D{}, options.FindOne().SetProjection(bson.D{{Key: "_ts", Value: 1}})).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["_ts"]; ok || len(doc) != 1 {
		t.Fatalf("projection {_ts: 1} returned %v, want only _id", doc)
	}
	doc = nil
	if err := coll.FindOneAndUpdate(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}, options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["_ts"]; ok {
		t.Fatalf("findAndModify returned _ts: %v", doc)
	}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 1 {
		t.Fatalf("aggregate: %v %v", docs, err)
	}
	if _, ok := docs[0]["_ts"]; ok {
		t.Fatalf("aggregate returned _ts: %v", docs[0])
	}
	wantIDs(t, coll, bson.D{{Key: "_ts", Value: bson.D{{Key: "$exists", Value: true}}}})
	wantIDs(t, coll, bson.D{{Key: "_ts", Value: bson.D{{Key: "$exists", Value: false}}}}, 1)
}

func TestRule03RootTimestampIsRejected(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "_ts", Value: 5}})
	wantCode(t, err, 2)
	// Ordered batch: the writes before the bad one stand, none after.
	_, err = coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "_ts", Value: 5}},
		bson.D{{Key: "_id", Value: 4}},
	})
	wantCode(t, err, 2)
	wantIDs(t, coll, bson.D{}, 2)
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "_ts", Value: 1}}}})
	wantCode(t, err, 2)
	_, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_ts", Value: 1}})
	wantCode(t, err, 2)
	// A nested _ts is ordinary data.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 5}, {Key: "x", Value: bson.D{{Key: "_ts", Value: 1}}}})
	wantIDs(t, coll, bson.D{{Key: "x._ts", Value: 1}}, 5)
}

func TestRule04TouchResetsTimestamp(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	ts.Clock.Advance(8 * time.Second)
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.MatchedCount != 1 || res.ModifiedCount != 0 {
		t.Fatalf("touch: matched %d modified %d, want 1 and 0", res.MatchedCount, res.ModifiedCount)
	}
	ts.Clock.Advance(10*time.Second - ms)
	wantIDs(t, coll, bson.D{}, 1)
	ts.Clock.Advance(ms)
	wantIDs(t, coll, bson.D{})
}

func TestRule05TSIndexValidation(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("ttl")
	good := []any{int32(-1), int32(1), int64(2147483647), float64(10), int32(2147483647)}
	for i, v := range good {
		coll := db.Collection("good" + string(rune('a'+i)))
		reply := enableTTL(t, coll, v)
		if n := reply.Lookup("numIndexesAfter").Int32(); n != 2 {
			t.Errorf("expireAfterSeconds %v: numIndexesAfter %d", v, n)
		}
	}
	bad := []any{int32(0), int32(-2), 10.5, math.NaN(), "10", int64(2147483648), 2147483648.0, nil, true, bson.D{}}
	for _, v := range bad {
		coll := db.Collection("bad")
		_, err := db.RunCommand(ctx, bson.D{
			{Key: "createIndexes", Value: coll.Name()},
			{Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: v}}}},
		}).Raw()
		wantCode(t, err, 2)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "bad"}})
	if err != nil || len(names) != 0 {
		t.Fatalf("a refused TTL index created the collection: %v %v", names, err)
	}
}

func TestRule06DefaultMinusOne(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, -1)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: 5}})
	ts.Clock.Advance(5*time.Second - ms)
	wantIDs(t, coll, bson.D{}, 1, 2)
	ts.Clock.Advance(ms)
	wantIDs(t, coll, bson.D{}, 1)
	ts.Clock.Advance(1000 * time.Hour)
	wantIDs(t, coll, bson.D{}, 1)
}

func TestRule07CreateReplyAndListIndexes(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "fresh")
	reply := enableTTL(t, coll, int32(10))
	if reply.Lookup("numIndexesBefore").Int32() != 1 || reply.Lookup("numIndexesAfter").Int32() != 2 ||
		!reply.Lookup("createdCollectionAutomatically").Boolean() {
		t.Fatalf("createIndexes reply %v", reply)
	}
	reply = enableTTL(t, coll, int32(10))
	if reply.Lookup("numIndexesAfter").Int32() != 2 || reply.Lookup("createdCollectionAutomatically").Boolean() {
		t.Fatalf("repeated createIndexes reply %v", reply)
	}
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("listIndexes: %v", specs)
	}
	s := specs[1]
	if s.Lookup("v").Int32() != 2 || s.Lookup("name").StringValue() != "_ts_1" ||
		s.Lookup("key").Document().String() != bson.Raw(mustMarshal(t, bson.D{{Key: "_ts", Value: int32(1)}})).String() ||
		s.Lookup("expireAfterSeconds").Int32() != 10 {
		t.Fatalf("listIndexes _ts entry: %v", s)
	}
}

func mustMarshal(t *testing.T, v any) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestRule08CollModChangesDefaultAtOnce(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 100)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: 1000}})
	ts.Clock.Advance(50 * time.Second)
	reply := run(t, coll.Database(), bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "expireAfterSeconds", Value: 30}}}})
	if old, _ := reply.Lookup("expireAfterSeconds_old").AsInt64OK(); old != 100 {
		t.Fatalf("collMod reply %v", reply)
	}
	if nw, _ := reply.Lookup("expireAfterSeconds_new").AsInt64OK(); nw != 30 {
		t.Fatalf("collMod reply %v", reply)
	}
	wantIDs(t, coll, bson.D{}, 2)
	// By name, and raising the default again.
	run(t, coll.Database(), bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 60}}}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 3}})
	ts.Clock.Advance(60*time.Second - ms)
	wantIDs(t, coll, bson.D{}, 2, 3)
	ts.Clock.Advance(ms)
	wantIDs(t, coll, bson.D{}, 2)
	_, err := coll.Database().RunCommand(ctx, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 0}}}}).Raw()
	wantCode(t, err, 2)
}

func TestRule09DroppingTheIndexTurnsTTLOff(t *testing.T) {
	ts := startServer(t, withoutReaper())
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: 100}})
	ts.Clock.Advance(11 * time.Second)
	wantIDs(t, coll, bson.D{}, 2)
	if err := coll.Indexes().DropOne(ctx, "_ts_1"); err != nil {
		t.Fatal(err)
	}
	// The document expired before the drop never comes back, and per-document
	// ttl is ignored from now on.
	ts.Clock.Advance(1000 * time.Second)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 3}})
	wantIDs(t, coll, bson.D{}, 2, 3)
	if n := count(t, coll, bson.D{}); n != 2 {
		t.Fatalf("count %d, want 2", n)
	}
	// Creating the index again turns TTL on again for every document.
	enableTTL(t, coll, 10)
	wantIDs(t, coll, bson.D{}, 3)
}

func TestRules10to12DocumentTTLValues(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	honoured := []any{20.0, int32(20), int64(20)}
	ignored := []any{20.5, int64(2147483649), int32(0), int32(-2), "20", nil, bson.A{20}, bson.D{{Key: "x", Value: 1}}}
	id := int32(0)
	for _, v := range honoured {
		id++
		mustInsert(t, coll, bson.D{{Key: "_id", Value: id}, {Key: "ttl", Value: v}})
	}
	for _, v := range ignored {
		id++
		mustInsert(t, coll, bson.D{{Key: "_id", Value: id}, {Key: "ttl", Value: v}})
	}
	// A nested ttl and a differently cased TTL are ordinary data.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 100}, {Key: "a", Value: bson.D{{Key: "ttl", Value: 20}}}}, bson.D{{Key: "_id", Value: 101}, {Key: "TTL", Value: 20}})
	ts.Clock.Advance(10 * time.Second)
	wantIDs(t, coll, bson.D{}, 1, 2, 3)
	// The ignored values were stored as given.
	var doc bson.M
	if err := ttlColl(t, ts, "c").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["ttl"] != 20.0 {
		t.Fatalf("doc 1: %v %v", doc, err)
	}
	ts.Clock.Advance(10 * time.Second)
	wantIDs(t, coll, bson.D{})
}

func TestRule10TTLIgnoredWithoutIndex(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 5}})
	ts.Clock.Advance(100 * time.Second)
	wantIDs(t, coll, bson.D{}, 1)
}

func TestRule13TTLMinusOneNeverExpires(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 1)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: -1}}, bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: -1.0}})
	ts.Clock.Advance(24 * 365 * time.Hour)
	wantIDs(t, coll, bson.D{}, 1, 2)
}

func TestRule14ChangingTTLByUpdate(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 100)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: 5}}, bson.D{{Key: "_id", Value: 3}, {Key: "ttl", Value: -1}})
	ts.Clock.Advance(3 * time.Second)
	set := func(id int32, update bson.D) {
		t.Helper()
		if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update); err != nil {
			t.Fatal(err)
		}
	}
	set(1, bson.D{{Key: "$set", Value: bson.D{{Key: "ttl", Value: 5}}}})
	set(2, bson.D{{Key: "$unset", Value: bson.D{{Key: "ttl", Value: ""}}}})
	set(3, bson.D{{Key: "$set", Value: bson.D{{Key: "ttl", Value: 7}}}})
	ts.Clock.Advance(5*time.Second - ms)
	wantIDs(t, coll, bson.D{}, 1, 2, 3)
	ts.Clock.Advance(ms)
	wantIDs(t, coll, bson.D{}, 2, 3)
	ts.Clock.Advance(2 * time.Second)
	wantIDs(t, coll, bson.D{}, 2)
	ts.Clock.Advance(100 * time.Second)
	wantIDs(t, coll, bson.D{})
}

// TestMatrix checks the nine cells of section 4 at the boundary: visible
// at _ts + lifetime - 1ms, absent at _ts + lifetime.
func TestMatrix(t *testing.T) {
	const own = 20
	type cell struct {
		name     string
		defaultS any // nil: no _ts index
		ttl      any // nil: no ttl field
		lifetime time.Duration
	}
	cells := []cell{
		{"noIndex/noTTL", nil, nil, 0},
		{"noIndex/ttl-1", nil, -1, 0},
		{"noIndex/ttlN", nil, own, 0},
		{"default-1/noTTL", -1, nil, 0},
		{"default-1/ttl-1", -1, -1, 0},
		{"default-1/ttlN", -1, own, own * time.Second},
		{"defaultN/noTTL", 10, nil, 10 * time.Second},
		{"defaultN/ttl-1", 10, -1, 0},
		{"defaultN/ttlN", 10, own, own * time.Second},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t)
			coll := ttlColl(t, ts, "m")
			if c.defaultS != nil {
				enableTTL(t, coll, c.defaultS)
			}
			doc := bson.D{{Key: "_id", Value: 1}}
			if c.ttl != nil {
				doc = append(doc, bson.E{Key: "ttl", Value: c.ttl})
			}
			mustInsert(t, coll, doc)
			if c.lifetime == 0 {
				ts.Clock.Advance(100 * 365 * 24 * time.Hour)
				wantIDs(t, coll, bson.D{}, 1)
				return
			}
			ts.Clock.Advance(c.lifetime - ms)
			wantIDs(t, coll, bson.D{}, 1)
			ts.Clock.Advance(ms)
			wantIDs(t, coll, bson.D{})
		})
	}
}

func TestRule15ExpiredDocumentsAreAbsentEverywhere(t *testing.T) {
	ts := startServer(t, withoutReaper())
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := int32(1); i <= 10; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "u", Value: i}, {Key: "k", Value: "x"}})
	}
	mustInsert(t, coll, docs...)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 100}, {Key: "u", Value: 100}, {Key: "k", Value: "x"}, {Key: "ttl", Value: -1}})
	// A cursor opened before expiry returns nothing that expired since.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(2).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if !cur.Next(ctx) || !cur.Next(ctx) {
		t.Fatal("first batch")
	}
	ts.Clock.Advance(10 * time.Second)
	var rest []int32
	for cur.Next(ctx) {
		rest = append(rest, cur.Current.Lookup("_id").Int32())
	}
	if len(rest) != 1 || rest[0] != 100 {
		t.Fatalf("getMore after expiry returned %v, want [100]", rest)
	}
	if n := count(t, coll, bson.D{}); n != 1 {
		t.Fatalf("countDocuments %d", n)
	}
	if n, err := coll.EstimatedDocumentCount(ctx); err != nil || n != 1 {
		t.Fatalf("count %d %v", n, err)
	}
	var vals []string
	if err := coll.Distinct(ctx, "k", bson.D{}).Decode(&vals); err != nil || len(vals) != 1 {
		t.Fatalf("distinct %v %v", vals, err)
	}
	var u []int32
	if err := coll.Distinct(ctx, "u", bson.D{}).Decode(&u); err != nil || len(u) != 1 || u[0] != 100 {
		t.Fatalf("distinct u %v %v", u, err)
	}
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})
	if err != nil || res.MatchedCount != 0 || res.ModifiedCount != 0 {
		t.Fatalf("update of expired: %+v %v", res, err)
	}
	res, err = coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})
	if err != nil || res.MatchedCount != 1 {
		t.Fatalf("updateMany: %+v %v", res, err)
	}
	del, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}})
	if err != nil || del.DeletedCount != 0 {
		t.Fatalf("delete of expired: %+v %v", del, err)
	}
	if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}).Err(); err != mongo.ErrNoDocuments {
		t.Fatalf("findAndModify of expired: %v", err)
	}
	// Upsert inserts a new document in place of the expired one.
	res, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "$set", Value: bson.D{{Key: "fresh", Value: true}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil || res.UpsertedCount != 1 || res.MatchedCount != 0 {
		t.Fatalf("upsert over expired: %+v %v", res, err)
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 4}}).Decode(&doc); err != nil || doc["fresh"] != true || doc["u"] != nil {
		t.Fatalf("upserted doc %v %v", doc, err)
	}
	// Insert with the same _id, and with a unique key an expired document held.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 5}, {Key: "u", Value: 5}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 50}, {Key: "u", Value: 6}})
	wantIDs(t, coll, bson.D{}, 4, 5, 50, 100)
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 51}, {Key: "u", Value: 100}})
	wantCode(t, err, 11000)
}

func TestRule16ReaperPurgesWithinASecond(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	var docs []any
	for i := int32(1); i <= 500; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	mustInsert(t, coll, docs...)
	before := ttlDeleted(t, ts)
	ts.Clock.Advance(10 * time.Second)
	// The reaper runs on real time; give it its one-second target, polling
	// the statistics that are the only place a purge shows.
	deadline := time.Now().Add(time.Second)
	for ttlDeleted(t, ts)-before < 500 {
		if time.Now().After(deadline) {
			t.Fatalf("reaper deleted %d of 500 within 1s", ttlDeleted(t, ts)-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ttlDeleted(t *testing.T, ts *testServer) int64 {
	t.Helper()
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	n, ok := status.Lookup("metrics", "ttl", "deletedDocuments").AsInt64OK()
	if !ok {
		t.Fatalf("serverStatus.metrics.ttl.deletedDocuments missing: %v", status.Lookup("metrics"))
	}
	return n
}

func TestRule17StatsExcludeExpired(t *testing.T) {
	ts := startServer(t, withoutReaper())
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: "xxxxxxxxxx"}}, bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: -1}})
	ts.Clock.Advance(10 * time.Second)
	stats := run(t, coll.Database(), bson.D{{Key: "collStats", Value: "c"}})
	if n, _ := stats.Lookup("count").AsInt64OK(); n != 1 {
		t.Fatalf("collStats count %d", n)
	}
	db := run(t, coll.Database(), bson.D{{Key: "dbStats", Value: 1}})
	if n, _ := db.Lookup("objects").AsInt64OK(); n != 1 {
		t.Fatalf("dbStats objects %d", n)
	}
	n, err := coll.EstimatedDocumentCount(ctx)
	if err != nil || n != 1 {
		t.Fatalf("count %d %v", n, err)
	}
}

func TestRule18ClockGoingBackDoesNotResurrect(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 10)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	ts.Clock.Advance(10 * time.Second)
	waitPurged(t, ts, 1)
	ts.Clock.Advance(-20 * time.Second)
	wantIDs(t, coll, bson.D{})
	// Expiry order still holds for documents written after the jump.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}, {Key: "ttl", Value: 5}})
	ts.Clock.Advance(5 * time.Second)
	wantIDs(t, coll, bson.D{}, 2)
	ts.Clock.Advance(5 * time.Second)
	wantIDs(t, coll, bson.D{})
}

// waitPurged waits, bounded, for the reaper to have deleted n documents.
func waitPurged(t *testing.T, ts *testServer, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ttlDeleted(t, ts) < n {
		if time.Now().After(deadline) {
			t.Fatalf("reaper deleted %d, want %d", ttlDeleted(t, ts), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRule19DateTTLIndex(t *testing.T) {
	ts := startServer(t, withoutReaper())
	coll := ttlColl(t, ts, "d")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)}); err != nil {
		t.Fatal(err)
	}
	now := ts.Clock.Now()
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: now}},
		bson.D{{Key: "_id", Value: 2}, {Key: "at", Value: bson.A{now.Add(time.Hour), now.Add(-30 * time.Second)}}},
		bson.D{{Key: "_id", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "at", Value: "yesterday"}},
	)
	// Date TTL documents stay visible until deleted (rule 20).
	ts.Clock.Advance(2 * time.Minute)
	wantIDs(t, coll, bson.D{}, 1, 2, 3, 4)
	db := coll.Database()
	for _, bad := range []struct {
		key bson.D
		v   any
	}{
		{bson.D{{Key: "a", Value: 1}}, "60"},
		{bson.D{{Key: "a", Value: 1}}, math.NaN()},
		{bson.D{{Key: "a", Value: 1}}, -1},
		{bson.D{{Key: "a", Value: 1}}, int64(2147483648)},
		{bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, 60},
	} {
		_, err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "d2"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bad.key}, {Key: "name", Value: "x"}, {Key: "expireAfterSeconds", Value: bad.v}}}}}).Raw()
		wantCode(t, err, 67)
	}
	// On the _id key, expireAfterSeconds is one more option the _id index
	// does not take: InvalidIndexSpecificationOption, as MongoDB answers
	// (validateIdIndexSpec in src/mongo/db/catalog/index_key_validate.cpp).
	_, err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "d2"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "x"}, {Key: "expireAfterSeconds", Value: 60}}}}}).Raw()
	wantCode(t, err, 197)
	run(t, db, bson.D{{Key: "createIndexes", Value: "d3"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}, {Key: "expireAfterSeconds", Value: 0}}}}})
}

func TestRule20DateTTLPurgedByReaper(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "d")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)}); err != nil {
		t.Fatal(err)
	}
	now := ts.Clock.Now()
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: now}},
		bson.D{{Key: "_id", Value: 2}, {Key: "at", Value: bson.A{now.Add(time.Hour), now.Add(-30 * time.Second)}}},
		bson.D{{Key: "_id", Value: 3}},
		bson.D{{Key: "_id", Value: 4}, {Key: "at", Value: now.Add(time.Hour)}},
	)
	ts.Clock.Advance(30 * time.Second)
	waitPurged(t, ts, 1)
	wantIDs(t, coll, bson.D{}, 1, 3, 4)
	ts.Clock.Advance(30 * time.Second)
	waitPurged(t, ts, 2)
	wantIDs(t, coll, bson.D{}, 3, 4)
}

func TestRule21CollModDateTTL(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "d")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: ts.Clock.Now()}})
	ts.Clock.Advance(time.Hour)
	wantIDs(t, coll, bson.D{}, 1)
	reply := run(t, coll.Database(), bson.D{{Key: "collMod", Value: "d"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "expireAfterSeconds", Value: 100}}}})
	if n, _ := reply.Lookup("expireAfterSeconds_new").AsInt64OK(); n != 100 {
		t.Fatalf("collMod reply %v", reply)
	}
	waitPurged(t, ts, 1)
	wantIDs(t, coll, bson.D{})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}, {Key: "at", Value: ts.Clock.Now()}})
	run(t, coll.Database(), bson.D{{Key: "collMod", Value: "d"}, {Key: "index", Value: bson.D{{Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 10}}}})
	ts.Clock.Advance(10 * time.Second)
	waitPurged(t, ts, 2)
	wantIDs(t, coll, bson.D{})
}

func TestRule22ServerStatusTTLMetrics(t *testing.T) {
	ts := startServer(t)
	coll := ttlColl(t, ts, "c")
	enableTTL(t, coll, 1)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	ts.Clock.Advance(time.Second)
	waitPurged(t, ts, 2)
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	for _, f := range []string{"passes", "subPasses"} {
		if n, ok := status.Lookup("metrics", "ttl", f).AsInt64OK(); !ok || n < 1 {
			t.Fatalf("metrics.ttl.%s = %v", f, status.Lookup("metrics", "ttl", f))
		}
	}
}

func TestRule24AdvanceClockCommand(t *testing.T) {
	ts := startServer(t)
	admin := ts.Client.Database("admin")
	reply := run(t, admin, bson.D{{Key: "advanceClock", Value: 1.5}})
	if got := reply.Lookup("now").Time(); !got.Equal(testEpoch.Add(1500 * ms)) {
		t.Fatalf("advanceClock now = %v", got)
	}
	_, err := admin.RunCommand(ctx, bson.D{{Key: "advanceClock", Value: "x"}}).Raw()
	wantCode(t, err, 14)

	sys := startServer(t, withSystemClock())
	_, err = sys.Client.Database("admin").RunCommand(ctx, bson.D{{Key: "advanceClock", Value: 1}}).Raw()
	wantCode(t, err, 20)
}

func withSystemClock() serverOption {
	return func(c *server.Config) { c.Clock, c.ManualClock = nil, false }
}

func withoutReaper() serverOption {
	return func(c *server.Config) { c.NoReaper = true }
}
