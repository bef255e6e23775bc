package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Snapshot reads outside transactions (MongoDB 5.0+, the drivers' snapshot
// sessions: specifications/source/sessions/snapshot-sessions.md): find,
// aggregate and distinct with readConcern {level: "snapshot"} read one
// point in time, say which in atClusterTime (a cursor's, or a distinct's
// at the top level; jstests/replsets/non_transaction_snapshot_reads.js),
// and every read of a snapshot session, getMores included, reads the
// time of its first.
func TestSnapshotReads(t *testing.T) {
	ts := startServer(t, withReplSet("rs0"))
	db := ts.Client.Database("snap")
	coll := db.Collection("c")
	for i := range 5 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 2}}); err != nil {
			t.Fatal(err)
		}
	}

	// The raw reply: cursor.atClusterTime, and none on a plain read.
	var res bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	atT, atI, ok := res.Lookup("cursor", "atClusterTime").TimestampOK()
	at := bson.Timestamp{T: atT, I: atI}
	if !ok || atT == 0 {
		t.Fatalf("a snapshot find's reply has no cursor.atClusterTime: %v", res)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "k"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := res.Lookup("atClusterTime").TimestampOK(); !ok {
		t.Fatalf("a snapshot distinct's reply has no atClusterTime: %v", res)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "c"}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if _, err := res.LookupErr("cursor", "atClusterTime"); err == nil {
		t.Fatalf("a plain find's reply has an atClusterTime: %v", res)
	}

	// A snapshot session reads its first read's time, whatever commits
	// after, across getMores too.
	sess, err := ts.Client.StartSession(options.Session().SetSnapshot(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	sctx := mongo.NewSessionContext(ctx, sess)
	count := func(ctx context.Context) int {
		t.Helper()
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(2))
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		return len(docs)
	}
	if n := count(sctx); n != 5 {
		t.Fatalf("the first snapshot read found %d documents, want 5", n)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 9}, {Key: "k", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	if n := count(sctx); n != 5 {
		t.Fatalf("a later read of the snapshot session found %d documents, want the 5 of its time", n)
	}
	vals, err := coll.Distinct(sctx, "k", bson.D{}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := vals.Values(); len(v) != 2 {
		t.Fatalf("distinct in the snapshot session: %v, want 2 values (not the later 7)", vals)
	}
	agg, err := coll.Aggregate(sctx, mongo.Pipeline{{{Key: "$count", Value: "n"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		N int `bson:"n"`
	}
	if err := agg.All(sctx, &got); err != nil || len(got) != 1 || got[0].N != 5 {
		t.Fatalf("aggregate in the snapshot session: %v, %v; want n 5", got, err)
	}
	if n := count(ctx); n != 5 { // 9 added, 0 deleted
		t.Fatalf("a plain read found %d documents", n)
	}

	// Refusals, as mongod's: a time after the cluster time, atClusterTime
	// without level snapshot, and snapshot on count.
	future := bson.Timestamp{T: at.T + 1000, I: 1}
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: future}}}},
		{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "local"}, {Key: "atClusterTime", Value: at}}}},
		{{Key: "count", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}},
	} {
		err := db.RunCommand(ctx, cmd).Err()
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorCode(72) {
			t.Errorf("%v: %v, want InvalidOptions (72)", cmd, err)
		}
	}
}
