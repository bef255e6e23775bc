package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// nextEvent reads one change event, failing the test if none comes.
func nextEvent(t *testing.T, cs *mongo.ChangeStream) bson.Raw {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !cs.Next(ctx) {
		t.Fatalf("no change event: %v", cs.Err())
	}
	return append(bson.Raw(nil), cs.Current...)
}

// wantEvent checks an event's operationType and returns it.
func wantEvent(t *testing.T, cs *mongo.ChangeStream, op string) bson.Raw {
	t.Helper()
	ev := nextEvent(t, cs)
	if got := ev.Lookup("operationType").StringValue(); got != op {
		t.Fatalf("event %s, want operationType %q", ev, op)
	}
	if _, ok := ev.Lookup("_id", "_data").StringValueOK(); !ok {
		t.Fatalf("event without resume token: %s", ev)
	}
	if op != "invalidate" {
		if _, _, ok := ev.Lookup("clusterTime").TimestampOK(); !ok {
			t.Fatalf("event without clusterTime: %s", ev)
		}
		if _, ok := ev.Lookup("wallTime").DateTimeOK(); !ok {
			t.Fatalf("event without wallTime: %s", ev)
		}
	}
	return ev
}

func wantField(t *testing.T, ev bson.Raw, want any, path ...string) {
	t.Helper()
	got := ev.Lookup(path...)
	wantRaw, err := bson.Marshal(bson.D{{Key: "v", Value: want}})
	if err != nil {
		t.Fatal(err)
	}
	w := bson.Raw(wantRaw).Lookup("v")
	if !got.Equal(w) {
		t.Fatalf("event %s: %v is %s, want %s", ev, path, got, w)
	}
}

func watchColl(t *testing.T, coll *mongo.Collection, pipeline any, opts ...options.Lister[options.ChangeStreamOptions]) *mongo.ChangeStream {
	t.Helper()
	if pipeline == nil {
		pipeline = mongo.Pipeline{}
	}
	cs, err := coll.Watch(testCtx(t), pipeline, opts...)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(func() { cs.Close(context.Background()) })
	return cs
}

// TestChangeStreamEventKinds: a collection's stream reports every kind of
// write in order, in MongoDB's shapes, and ends with an invalidate when the
// collection is dropped.
func TestChangeStreamEventKinds(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	coll := client.Database("cs").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 0}}) // creates it
	cs := watchColl(t, coll, nil)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 1}, {Key: "arr", Value: bson.A{1, 2, 3}}})
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{
		{Key: "$set", Value: bson.D{{Key: "a", Value: 2}}}, {Key: "$unset", Value: bson.D{{Key: "b", Value: ""}}},
		{Key: "$pop", Value: bson.D{{Key: "arr", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "c", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	// Another collection's writes are not in this stream.
	mustInsert(t, client.Database("cs").Collection("other"), bson.D{{Key: "_id", Value: 9}})
	if err := coll.Drop(ctx); err != nil {
		t.Fatal(err)
	}

	ev := wantEvent(t, cs, "insert")
	wantField(t, ev, bson.D{{Key: "db", Value: "cs"}, {Key: "coll", Value: "c"}}, "ns")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}}, "documentKey")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 1}, {Key: "arr", Value: bson.A{1, 2, 3}}}, "fullDocument")
	ev = wantEvent(t, cs, "update")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}}, "documentKey")
	wantField(t, ev, bson.D{{Key: "a", Value: 2}}, "updateDescription", "updatedFields")
	wantField(t, ev, bson.A{"b"}, "updateDescription", "removedFields")
	wantField(t, ev, bson.A{bson.D{{Key: "field", Value: "arr"}, {Key: "newSize", Value: int32(2)}}}, "updateDescription", "truncatedArrays")
	if _, err := ev.LookupErr("fullDocument"); err == nil {
		t.Fatalf("update event with fullDocument by default: %s", ev)
	}
	ev = wantEvent(t, cs, "replace")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}, {Key: "c", Value: 1}}, "fullDocument")
	ev = wantEvent(t, cs, "delete")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}}, "documentKey")
	ev = wantEvent(t, cs, "drop")
	wantField(t, ev, bson.D{{Key: "db", Value: "cs"}, {Key: "coll", Value: "c"}}, "ns")
	wantEvent(t, cs, "invalidate")
	if cs.Next(ctx) {
		t.Fatalf("event after invalidate: %s", cs.Current)
	}
	if cs.ID() != 0 {
		t.Fatalf("cursor %d still open after invalidate", cs.ID())
	}
}

// TestChangeStreamRename: renaming the watched collection reports a rename
// and invalidates the stream; startAfter the invalidate starts a new one.
func TestChangeStreamRename(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("cs")
	coll := db.Collection("a")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	cs := watchColl(t, coll, nil)
	run(t, client.Database("admin"), bson.D{{Key: "renameCollection", Value: "cs.a"}, {Key: "to", Value: "cs.b"}})
	ev := wantEvent(t, cs, "rename")
	wantField(t, ev, bson.D{{Key: "db", Value: "cs"}, {Key: "coll", Value: "a"}}, "ns")
	wantField(t, ev, bson.D{{Key: "db", Value: "cs"}, {Key: "coll", Value: "b"}}, "to")
	inv := wantEvent(t, cs, "invalidate")
	token := inv.Lookup("_id").Document()

	_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token))
	wantCode(t, err, 260) // InvalidResumeToken
	after := watchColl(t, coll, nil, options.ChangeStream().SetStartAfter(token))
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	ev = wantEvent(t, after, "insert")
	wantField(t, ev, bson.D{{Key: "_id", Value: 2}}, "documentKey")
}

// TestChangeStreamResumeAfterRestart: a token taken before a restart
// resumes the stream after it with nothing lost and nothing repeated.
func TestChangeStreamResumeAfterRestart(t *testing.T) {
	ts, client := startReplSet(t)
	coll := client.Database("cs").Collection("r")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 0}})
	cs := watchColl(t, coll, nil)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	ev := wantEvent(t, cs, "insert")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}}, "documentKey")
	token := ev.Lookup("_id").Document()
	cs.Close(context.Background())
	client.Disconnect(context.Background())

	ts.Restart(t)
	client = ts.NewClient(t, options.Client().ApplyURI(ts.URI+"?replicaSet=rs0"))
	coll = client.Database("cs").Collection("r")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 3}})
	resumed := watchColl(t, coll, nil, options.ChangeStream().SetResumeAfter(token))
	for _, id := range []int{2, 3} {
		ev := wantEvent(t, resumed, "insert")
		wantField(t, ev, bson.D{{Key: "_id", Value: int32(id)}}, "documentKey")
	}
	// A token of this collection's stream does not resume another's.
	_, err := client.Database("cs").Collection("other").Watch(testCtx(t), mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(token))
	if err == nil {
		// The check happens as the stream reads the token's entry.
		t.Fatal("resuming another collection's token was accepted")
	}
	wantCode(t, err, 280)
}

// TestChangeStreamDatabaseAndCluster: aggregate: 1 streams see every
// collection of a database, or of every database.
func TestChangeStreamDatabaseAndCluster(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("csdb")
	mustInsert(t, db.Collection("x"), bson.D{{Key: "_id", Value: 0}})
	dbs, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer dbs.Close(context.Background())
	all, err := client.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(context.Background())
	mustInsert(t, db.Collection("x"), bson.D{{Key: "_id", Value: 1}})
	mustInsert(t, client.Database("elsewhere").Collection("y"), bson.D{{Key: "_id", Value: 2}})
	mustInsert(t, db.Collection("z"), bson.D{{Key: "_id", Value: 3}})
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x", "z"} {
		ev := wantEvent(t, dbs, "insert")
		wantField(t, ev, want, "ns", "coll")
	}
	// dropDatabase comes after the drops of its collections.
	wantEvent(t, dbs, "drop")
	wantEvent(t, dbs, "drop")
	ev := wantEvent(t, dbs, "dropDatabase")
	wantField(t, ev, bson.D{{Key: "db", Value: "csdb"}}, "ns")
	wantEvent(t, dbs, "invalidate")

	for _, want := range []string{"csdb", "elsewhere", "csdb"} {
		ev := wantEvent(t, all, "insert")
		wantField(t, ev, want, "ns", "db")
	}
}

// TestChangeStreamStagesAndLookup: later stages filter and reshape events;
// updateLookup adds the document as it is now.
func TestChangeStreamStagesAndLookup(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	coll := client.Database("cs").Collection("s")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 0}})
	cs := watchColl(t, coll, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "update"}}}},
		{{Key: "$project", Value: bson.D{{Key: "operationType", Value: 1}, {Key: "fullDocument", Value: 1}}}},
	}, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}})
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, cs)
	wantField(t, ev, "update", "operationType")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 2}}, "fullDocument")
	if _, err := ev.LookupErr("ns"); err == nil {
		t.Fatalf("$project kept ns: %s", ev)
	}

	// Without stored pre-images, whenAvailable finds none: null.
	before := watchColl(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	ev = wantEvent(t, before, "delete")
	if v, err := ev.LookupErr("fullDocumentBeforeChange"); err != nil || v.Type != bson.TypeNull {
		t.Fatalf("delete event with whenAvailable: %s", ev)
	}

	// A stage that drops the resume token ends the stream.
	noID := watchColl(t, coll, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if noID.Next(nctx) {
		t.Fatalf("event without its _id delivered: %s", noID.Current)
	}
	wantCode(t, noID.Err(), 280)
}

// TestChangeStreamTTLDelete: a TTL purge is a delete event.
func TestChangeStreamTTLDelete(t *testing.T) {
	ts, client := startReplSet(t)
	coll := client.Database("ttl").Collection("c")
	enableTTL(t, coll, 10)
	cs := watchColl(t, coll, nil)
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 5}})
	ev := wantEvent(t, cs, "insert")
	// The expiry header is never shown; the ttl field is the client's own.
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 5}}, "fullDocument")
	ts.Clock.Advance(5 * time.Second)
	ev = wantEvent(t, cs, "delete")
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}}, "documentKey")
}

// TestChangeStreamAwait: a getMore waits for the next event instead of
// answering at once, and an empty batch still carries a resume token.
func TestChangeStreamAwait(t *testing.T) {
	_, client := startReplSet(t)
	coll := client.Database("cs").Collection("w")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 0}})
	cs := watchColl(t, coll, nil, options.ChangeStream().SetMaxAwaitTime(50*time.Millisecond))
	if cs.TryNext(testCtx(t)) {
		t.Fatalf("event before any write: %s", cs.Current)
	}
	if cs.ResumeToken() == nil {
		t.Fatal("no postBatchResumeToken on an empty batch")
	}
	done := make(chan bson.Raw)
	go func() { done <- nextEvent(t, cs) }()
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	ev := <-done
	wantField(t, ev, bson.D{{Key: "_id", Value: 1}}, "documentKey")
}

// TestChangeStreamErrors: where and how $changeStream is refused.
func TestChangeStreamErrors(t *testing.T) {
	standalone := startServer(t)
	ctx := testCtx(t)
	_, err := standalone.Client.Database("cs").Collection("c").Watch(ctx, mongo.Pipeline{})
	if onTiKVMock(t) {
		// A server on a shared store streams every server's changes, as
		// a mongos does, replica set or not (integration/manyservers_changestream_test.go).
		if err != nil {
			t.Fatalf("watch on a shared store: %v", err)
		}
	} else {
		wantCode(t, err, 40573)
	}

	_, client := startReplSet(t)
	coll := client.Database("cs").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(&bson.Timestamp{T: 1, I: 0}))
	wantCode(t, err, 286) // ChangeStreamHistoryLost
	_, err = coll.Watch(ctx, mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "x", Value: 1}}}}})
	if err == nil {
		t.Fatal("$sort after $changeStream accepted")
	}
	_, err = client.Database("cs").RunCommand(ctx, bson.D{{Key: "aggregate", Value: "c"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "bogus", Value: 1}}}}}},
		{Key: "cursor", Value: bson.D{}}}).Raw()
	wantCode(t, err, 40415)
	_, err = client.Database("cs").RunCommand(ctx, bson.D{{Key: "aggregate", Value: 1},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "allChangesForCluster", Value: true}}}}}},
		{Key: "cursor", Value: bson.D{}}}).Raw()
	wantCode(t, err, 73) // InvalidNamespace: only on admin
}

// TestChangeStreamClients: mongosh's db.coll.watch(), the Node.js driver's
// and pymongo's watch() against a one-member set.
func TestChangeStreamClients(t *testing.T) {
	ts := startServer(t, withReplSet("rs0"))
	uri := ts.URI + "test?replicaSet=rs0"
	t.Run("mongosh", func(t *testing.T) { runMongoshScript(t, ts, "changestream.js") })
	t.Run("node", func(t *testing.T) { runNodeScript(t, "changestream.mjs", uri) })
	t.Run("node6-expire", func(t *testing.T) {
		// mongoose 8's driver (mongodb@6 under an npm alias): how its
		// applications get expire events (issue 17, item 23).
		requireClient(t, exists("clients/node_modules/mongodb6"), "the MongoDB Node.js driver 6.x", "npm ci --prefix integration/clients (make test does it)")
		runNodeScript(t, "expire_node6.mjs", uri)
	})
	t.Run("pymongo", func(t *testing.T) { runPythonScript(t, "changestream.py", uri) })
}
