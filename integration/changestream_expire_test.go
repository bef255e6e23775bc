package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func expireEvents() *options.ChangeStreamOptionsBuilder {
	return options.ChangeStream().SetCustomPipeline(bson.M{"showExpireEvents": true})
}

// wantExpire checks that the next event is the expire event of _id id at
// the instant at.
func wantExpire(t *testing.T, cs *mongo.ChangeStream, id any, at time.Time) bson.Raw {
	t.Helper()
	ev := wantEvent(t, cs, "expire")
	wantField(t, ev, bson.D{{Key: "_id", Value: id}}, "documentKey")
	if got := ev.Lookup("wallTime").Time(); !got.Equal(at) {
		t.Fatalf("expire event %s: wallTime %v, want the expiry instant %v", ev, got, at)
	}
	return ev
}

// TestChangeStreamExpireEvents: with showExpireEvents a stream gets an
// expire event at the manual-clock instant each document expires, in
// expiry order, before the reaper's delete event of it; resuming after an
// expire event neither repeats nor loses one.
func TestChangeStreamExpireEvents(t *testing.T) {
	ts, client := startReplSet(t)
	coll := client.Database("ttl").Collection("exp")
	enableTTL(t, coll, 100)
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 2}, {Key: "ttl", Value: 10}},
		bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 5}},
		bson.D{{Key: "_id", Value: 3}})
	cs := watchColl(t, coll, nil, expireEvents())
	plain := watchColl(t, coll, nil)

	ts.Clock.Advance(5 * time.Second)
	first := wantExpire(t, cs, 1, testEpoch.Add(5*time.Second))
	if n := count(t, coll, bson.D{}); n != 2 {
		t.Fatalf("count %d after the first expiry, want 2", n)
	}
	wantField(t, wantEvent(t, cs, "delete"), bson.D{{Key: "_id", Value: 1}}, "documentKey")

	ts.Clock.Advance(5 * time.Second)
	wantExpire(t, cs, 2, testEpoch.Add(10*time.Second))
	wantField(t, wantEvent(t, cs, "delete"), bson.D{{Key: "_id", Value: 2}}, "documentKey")

	// A stream without the option sees the purges only.
	for _, id := range []int{1, 2} {
		wantField(t, wantEvent(t, plain, "delete"), bson.D{{Key: "_id", Value: id}}, "documentKey")
	}

	// Resuming after the first expire event: the delete of 1, then 2's
	// events, once each.
	resumed := watchColl(t, coll, nil, expireEvents().SetResumeAfter(first.Lookup("_id").Document()))
	wantField(t, wantEvent(t, resumed, "delete"), bson.D{{Key: "_id", Value: 1}}, "documentKey")
	wantExpire(t, resumed, 2, testEpoch.Add(10*time.Second))
	wantField(t, wantEvent(t, resumed, "delete"), bson.D{{Key: "_id", Value: 2}}, "documentKey")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 4}, {Key: "ttl", Value: -1}})
	wantEvent(t, resumed, "insert")

	// Events keep the order in which they happened: the insert, then
	// 3's expiry; 4 (ttl -1) never expires.
	ts.Clock.Advance(900 * time.Second)
	wantEvent(t, cs, "insert")
	wantExpire(t, cs, 3, testEpoch.Add(100*time.Second))
	wantField(t, wantEvent(t, cs, "delete"), bson.D{{Key: "_id", Value: 3}}, "documentKey")
}

// TestChangeStreamExpireDateTTL: a document of a MongoDB date TTL index
// has its expire event at its date plus expireAfterSeconds.
func TestChangeStreamExpireDateTTL(t *testing.T) {
	ts, client := startReplSet(t)
	coll := client.Database("ttl").Collection("dates")
	run(t, coll.Database(), bson.D{
		{Key: "createIndexes", Value: coll.Name()},
		{Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 60}}}},
	})
	at := testEpoch.Add(30 * time.Second)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: "d"}, {Key: "at", Value: at}}, bson.D{{Key: "_id", Value: "never"}, {Key: "at", Value: "not a date"}})
	cs := watchColl(t, coll, nil, expireEvents())
	ts.Clock.Advance(89 * time.Second)
	ts.Clock.Advance(time.Second)
	wantExpire(t, cs, "d", at.Add(60*time.Second))
	wantField(t, wantEvent(t, cs, "delete"), bson.D{{Key: "_id", Value: "d"}}, "documentKey")
}

// TestChangeStreamExpireResumeAfterRestart: an expire event's token
// resumes after a restart, without the event again, and a database
// stream reports the expiries of all its collections in instant order.
func TestChangeStreamExpireResumeAfterRestart(t *testing.T) {
	ts, client := startReplSet(t)
	db := client.Database("ttl")
	for _, name := range []string{"a", "b"} {
		enableTTL(t, db.Collection(name), -1)
	}
	mustInsert(t, db.Collection("b"), bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 3}})
	mustInsert(t, db.Collection("a"), bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 4}})
	cs, err := db.Watch(testCtx(t), mongo.Pipeline{}, expireEvents())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(context.Background())
	ts.Clock.Advance(3 * time.Second)
	ev := wantExpire(t, cs, 1, testEpoch.Add(3*time.Second))
	wantField(t, ev, "b", "ns", "coll")
	token := ev.Lookup("_id").Document()
	cs.Close(context.Background())
	client.Disconnect(context.Background())

	ts.Restart(t)
	client = ts.NewClient(t, options.Client().ApplyURI(ts.URI+"?replicaSet=rs0"))
	ts.Clock.Advance(time.Second)
	resumed, err := client.Database("ttl").Watch(testCtx(t), mongo.Pipeline{}, expireEvents().SetResumeAfter(token))
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close(context.Background())
	ev = wantEvent(t, resumed, "delete")
	wantField(t, ev, "b", "ns", "coll")
	ev = wantExpire(t, resumed, 1, testEpoch.Add(4*time.Second))
	wantField(t, ev, "a", "ns", "coll")
	ev = wantEvent(t, resumed, "delete")
	wantField(t, ev, "a", "ns", "coll")
}

// TestChangeStreamExpireResumeClockBehind: lethe --clock=manual starts its
// clock at the real time again on each restart, so after a run that moved
// it forward the clock is behind the expire events a stream had read. A
// token taken after an expire event still resumes: the purge that followed
// it comes as its delete, without the expire event again, and without a
// MaxTimeMSExpired (50) the client never asked for (issue 17, item 24).
// getMore without maxTimeMS on an awaitData cursor waits and returns an
// empty batch (MongoDB's docs, "Tailable Cursors"; getmore_cmd.cpp).
func TestChangeStreamExpireResumeClockBehind(t *testing.T) {
	ts, client := startReplSet(t)
	coll := client.Database("ttl").Collection("behind")
	enableTTL(t, coll, -1)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 3}})
	cs := watchColl(t, coll, nil, expireEvents())
	ts.Clock.Advance(3 * time.Second)
	token := wantExpire(t, cs, 1, testEpoch.Add(3*time.Second)).Lookup("_id").Document()
	wantField(t, wantEvent(t, cs, "delete"), bson.D{{Key: "_id", Value: 1}}, "documentKey")
	cs.Close(context.Background())
	client.Disconnect(context.Background())

	ts.stop(t)
	ts.Clock.Set(testEpoch) // a new process: its manual clock starts afresh
	ts.start(t)
	client = ts.NewClient(t, options.Client().ApplyURI(ts.URI+"?replicaSet=rs0"))
	coll = client.Database("ttl").Collection("behind")
	resumed := watchColl(t, coll, nil, expireEvents().SetResumeAfter(token))
	wantField(t, wantEvent(t, resumed, "delete"), bson.D{{Key: "_id", Value: 1}}, "documentKey")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	wantEvent(t, resumed, "insert")
	// An empty getMore, not an error.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if resumed.TryNext(ctx) {
		t.Fatalf("unexpected event %s", resumed.Current)
	}
	if err := resumed.Err(); err != nil {
		t.Fatalf("getMore without maxTimeMS failed: %v", err)
	}
}
