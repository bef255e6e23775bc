package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

var preImagesOn = bson.D{{Key: "enabled", Value: true}}

// collOptions returns the options listCollections reports for db.name.
func collOptions(t *testing.T, db *mongo.Database, name string) bson.Raw {
	t.Helper()
	cur, err := db.ListCollections(testCtx(t), bson.D{{Key: "name", Value: name}})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.Raw
	if err := cur.All(testCtx(t), &got); err != nil || len(got) != 1 {
		t.Fatalf("listCollections %s: %v, %v", name, got, err)
	}
	return got[0].Lookup("options").Document()
}

// TestPreImagesOption: create and collMod take changeStreamPreAndPostImages,
// listCollections shows it while enabled, and malformed values, views and
// internal databases are refused with MongoDB's codes.
func TestPreImagesOption(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("img")
	run := func(cmd bson.D) error { return db.RunCommand(ctx, cmd).Err() }
	if err := run(bson.D{{Key: "create", Value: "on"}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}); err != nil {
		t.Fatal(err)
	}
	wantField(t, collOptions(t, db, "on"), preImagesOn, "changeStreamPreAndPostImages")
	if err := run(bson.D{{Key: "create", Value: "off"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: false}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := collOptions(t, db, "off").LookupErr("changeStreamPreAndPostImages"); err == nil {
		t.Fatal("disabled option listed")
	}
	if err := run(bson.D{{Key: "collMod", Value: "off"}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}); err != nil {
		t.Fatal(err)
	}
	wantField(t, collOptions(t, db, "off"), preImagesOn, "changeStreamPreAndPostImages")
	if err := run(bson.D{{Key: "collMod", Value: "on"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: false}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := collOptions(t, db, "on").LookupErr("changeStreamPreAndPostImages"); err == nil {
		t.Fatal("option listed after collMod disabled it")
	}

	for _, c := range []struct {
		v    any
		code int
	}{
		{true, 14},                               // TypeMismatch: not an object
		{bson.D{}, 40414},                        // enabled missing
		{bson.D{{Key: "enabled", Value: 1}}, 14}, // enabled not a bool
		{bson.D{{Key: "enabled", Value: true}, {Key: "x", Value: 1}}, 40415},
	} {
		for _, cmd := range []string{"create", "collMod"} {
			wantCode(t, run(bson.D{{Key: cmd, Value: "on"}, {Key: "changeStreamPreAndPostImages", Value: c.v}}), c.code)
		}
	}
	// Views have no pre-images; the internal databases refuse the option.
	wantCode(t, run(bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "on"}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}), 72)
	if err := run(bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "on"}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, run(bson.D{{Key: "collMod", Value: "v"}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}), 72)
	wantCode(t, client.Database("admin").RunCommand(ctx, bson.D{{Key: "create", Value: "x"}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}).Err(), 72)
}

// wantImage checks an event's field: the document want, or null if nil.
func wantImage(t *testing.T, ev bson.Raw, field string, want bson.D) {
	t.Helper()
	if want == nil {
		if v, err := ev.LookupErr(field); err != nil || v.Type != bson.TypeNull {
			t.Fatalf("event %s: %s is not null", ev, field)
		}
		return
	}
	wantField(t, ev, want, field)
}

func doc1(a any) bson.D { return bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: a}} }

// TestChangeStreamImages: with the option on, update, replace and delete
// events carry the document before the change, and an update's
// fullDocument under whenAvailable or required is the document right after
// that update, not as it is when the event is read.
func TestChangeStreamImages(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("img")
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetChangeStreamPreAndPostImages(preImagesOn)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("c")
	required := options.ChangeStream().SetFullDocument(options.Required).SetFullDocumentBeforeChange(options.Required)
	cs := watchColl(t, coll, nil, required)
	mustInsert(t, coll, doc1(int32(1)))
	one := bson.D{{Key: "_id", Value: 1}}
	if _, err := coll.UpdateOne(ctx, one, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOneAndUpdate(ctx, one, bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.ReplaceOne(ctx, one, bson.D{{Key: "b", Value: "r"}}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOneAndDelete(ctx, one).Err(); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, cs, "insert")
	ev := wantEvent(t, cs, "update")
	wantImage(t, ev, "fullDocumentBeforeChange", doc1(int32(1)))
	wantImage(t, ev, "fullDocument", doc1(int32(2))) // not a: 3, the document now
	ev = wantEvent(t, cs, "update")
	wantImage(t, ev, "fullDocumentBeforeChange", doc1(int32(2)))
	wantImage(t, ev, "fullDocument", doc1(int32(3)))
	ev = wantEvent(t, cs, "replace")
	wantImage(t, ev, "fullDocumentBeforeChange", doc1(int32(3)))
	wantImage(t, ev, "fullDocument", bson.D{{Key: "_id", Value: int32(1)}, {Key: "b", Value: "r"}})
	ev = wantEvent(t, cs, "delete")
	wantImage(t, ev, "fullDocumentBeforeChange", bson.D{{Key: "_id", Value: int32(1)}, {Key: "b", Value: "r"}})
}

// TestChangeStreamImagesMissing: on a collection without the option,
// whenAvailable gives null and required fails the stream with
// NoMatchingDocument (47); a collMod turning the option on takes effect
// from the next write, within the same stream.
func TestChangeStreamImagesMissing(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("img")
	coll := db.Collection("plain")
	mustInsert(t, coll, doc1(int32(1)))
	one := bson.D{{Key: "_id", Value: 1}}
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}

	avail := watchColl(t, coll, nil, options.ChangeStream().SetFullDocument(options.WhenAvailable).SetFullDocumentBeforeChange(options.WhenAvailable))
	reqBefore := watchColl(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.Required))
	reqAfter := watchColl(t, coll, nil, options.ChangeStream().SetFullDocument(options.Required))
	if _, err := coll.UpdateOne(ctx, one, inc); err != nil {
		t.Fatal(err)
	}
	ev := wantEvent(t, avail, "update")
	wantImage(t, ev, "fullDocumentBeforeChange", nil)
	wantImage(t, ev, "fullDocument", nil)
	for _, cs := range []*mongo.ChangeStream{reqBefore, reqAfter} {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if cs.Next(nctx) {
			t.Fatalf("event without its required image: %s", cs.Current)
		}
		cancel()
		wantCode(t, cs.Err(), 47)
	}

	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "plain"}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, one, inc); err != nil {
		t.Fatal(err)
	}
	ev = wantEvent(t, avail, "update")
	wantImage(t, ev, "fullDocumentBeforeChange", doc1(int32(2)))
	wantImage(t, ev, "fullDocument", doc1(int32(3)))
}

// TestChangeStreamImagesAfterRestart: images are stored, so a stream
// resumed after a restart still gets them.
func TestChangeStreamImagesAfterRestart(t *testing.T) {
	ts, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("img")
	if err := db.CreateCollection(ctx, "r", options.CreateCollection().SetChangeStreamPreAndPostImages(preImagesOn)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("r")
	cs := watchColl(t, coll, nil)
	mustInsert(t, coll, doc1(int32(1)))
	token := wantEvent(t, cs, "insert").Lookup("_id").Document()
	cs.Close(context.Background())
	one := bson.D{{Key: "_id", Value: 1}}
	if _, err := coll.UpdateOne(ctx, one, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteOne(ctx, one); err != nil {
		t.Fatal(err)
	}
	client.Disconnect(context.Background())

	ts.Restart(t)
	client = ts.NewClient(t, options.Client().ApplyURI(ts.URI+"?replicaSet=rs0"))
	coll = client.Database("img").Collection("r")
	resumed := watchColl(t, coll, nil, options.ChangeStream().SetResumeAfter(token).
		SetFullDocument(options.Required).SetFullDocumentBeforeChange(options.Required))
	ev := wantEvent(t, resumed, "update")
	wantImage(t, ev, "fullDocumentBeforeChange", doc1(int32(1)))
	wantImage(t, ev, "fullDocument", doc1("x"))
	ev = wantEvent(t, resumed, "delete")
	wantImage(t, ev, "fullDocumentBeforeChange", doc1("x"))
}

// TestChangeStreamExpandedEvents: showExpandedEvents adds create,
// createIndexes, dropIndexes and modify events, collectionUUID on events
// of a collection, operationDescription, and disambiguatedPaths in an
// update's description; a stream without it sees none of these.
func TestChangeStreamExpandedEvents(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("exp")
	mustInsert(t, db.Collection("other"), bson.D{{Key: "_id", Value: 0}})
	plain := watchColl(t, db.Collection("e"), nil)
	cs, err := db.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(context.Background()) })

	if err := db.CreateCollection(ctx, "e", options.CreateCollection().SetChangeStreamPreAndPostImages(preImagesOn)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("e")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "m", Value: bson.D{{Key: "7", Value: 0}}}})
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "m.7", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "e"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: false}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := coll.Indexes().DropOne(ctx, "a_1"); err != nil {
		t.Fatal(err)
	}
	if err := coll.Drop(ctx); err != nil {
		t.Fatal(err)
	}

	ev := wantEvent(t, cs, "create")
	uuid := ev.Lookup("collectionUUID")
	if _, data, ok := uuid.BinaryOK(); !ok || uuid.Type != bson.TypeBinary || len(data) != 16 {
		t.Fatalf("create event without collectionUUID: %s", ev)
	}
	wantField(t, ev, bson.D{{Key: "db", Value: "exp"}, {Key: "coll", Value: "e"}}, "ns")
	wantField(t, ev, preImagesOn, "operationDescription", "changeStreamPreAndPostImages")
	ev = wantEvent(t, cs, "createIndexes")
	wantField(t, ev, bson.D{{Key: "a", Value: int32(1)}}, "operationDescription", "indexes", "0", "key")
	wantField(t, ev, "a_1", "operationDescription", "indexes", "0", "name")
	ev = wantEvent(t, cs, "insert")
	if !ev.Lookup("collectionUUID").Equal(uuid) {
		t.Fatalf("insert event's collectionUUID: %s", ev)
	}
	ev = wantEvent(t, cs, "update")
	wantField(t, ev, bson.D{{Key: "m.7", Value: int32(1)}}, "updateDescription", "updatedFields")
	wantField(t, ev, bson.D{{Key: "m.7", Value: bson.A{"m", "7"}}}, "updateDescription", "disambiguatedPaths")
	ev = wantEvent(t, cs, "modify")
	wantField(t, ev, bson.D{{Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: false}}}}, "operationDescription")
	// The options before the collMod, with the collection's UUID.
	wantField(t, ev, bson.D{{Key: "uuid", Value: uuid}, {Key: "changeStreamPreAndPostImages", Value: preImagesOn}}, "stateBeforeChange", "collectionOptions")
	ev = wantEvent(t, cs, "dropIndexes")
	wantField(t, ev, "a_1", "operationDescription", "indexes", "0", "name")
	ev = wantEvent(t, cs, "drop")
	if !ev.Lookup("collectionUUID").Equal(uuid) {
		t.Fatalf("drop event's collectionUUID: %s", ev)
	}

	// The stream without the option: the writes and the drop only.
	for _, op := range []string{"insert", "update", "drop", "invalidate"} {
		ev := wantEvent(t, plain, op)
		for _, f := range []string{"collectionUUID", "operationDescription", "updateDescription.disambiguatedPaths"} {
			if _, err := ev.LookupErr(strings.Split(f, ".")...); err == nil {
				t.Fatalf("%s without showExpandedEvents: %s", f, ev)
			}
		}
	}
}

// TestChangeStreamImagesTTLPurge: the delete event of a TTL purge carries
// the purged document as its pre-image, as MongoDB records pre-images of
// TTL deletes.
func TestChangeStreamImagesTTLPurge(t *testing.T) {
	ts, client := startReplSet(t)
	db := client.Database("ttl")
	if err := db.CreateCollection(testCtx(t), "img", options.CreateCollection().SetChangeStreamPreAndPostImages(preImagesOn)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("img")
	enableTTL(t, coll, 10)
	cs := watchColl(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.Required))
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 5}, {Key: "v", Value: "x"}})
	wantEvent(t, cs, "insert")
	ts.Clock.Advance(5 * time.Second)
	ev := wantEvent(t, cs, "delete")
	wantImage(t, ev, "fullDocumentBeforeChange", bson.D{{Key: "_id", Value: int32(1)}, {Key: "ttl", Value: int32(5)}, {Key: "v", Value: "x"}})
}

// TestPreImagesExpireAfterSeconds: the changeStreamOptions cluster
// parameter bounds how long pre-images are kept; getClusterParameter
// reports it, malformed values fail with BadValue, and a standalone server
// refuses both commands, as mongod does.
func TestPreImagesExpireAfterSeconds(t *testing.T) {
	standalone := startServer(t)
	admin := func(c *mongo.Client, cmd bson.D) (bson.Raw, error) {
		return c.Database("admin").RunCommand(testCtx(t), cmd).Raw()
	}
	get := bson.D{{Key: "getClusterParameter", Value: "changeStreamOptions"}}
	setTo := func(v any) bson.D {
		return bson.D{{Key: "setClusterParameter", Value: bson.D{{Key: "changeStreamOptions", Value: bson.D{
			{Key: "preAndPostImages", Value: bson.D{{Key: "expireAfterSeconds", Value: v}}}}}}}}
	}
	_, err := admin(standalone.Client, get)
	wantCode(t, err, 20) // IllegalOperation
	_, err = admin(standalone.Client, setTo(int64(10)))
	wantCode(t, err, 20)

	ts, client := startReplSet(t)
	got, err := admin(client, get)
	if err != nil {
		t.Fatal(err)
	}
	wantField(t, got, bson.D{{Key: "expireAfterSeconds", Value: "off"}}, "clusterParameters", "0", "preAndPostImages")
	wantField(t, got, bson.Timestamp{}, "clusterParameters", "0", "clusterParameterTime")
	for _, bad := range []any{"on", int64(0), int32(-1), 1.5, true} {
		_, err := admin(client, setTo(bad))
		wantCode(t, err, 2) // BadValue
	}
	_, err = admin(client, bson.D{{Key: "setClusterParameter", Value: bson.D{{Key: "changeStreamOptions", Value: bson.D{}}}}})
	wantCode(t, err, 2)
	_, err = admin(client, bson.D{{Key: "getClusterParameter", Value: "noSuchParameter"}})
	wantCode(t, err, 4) // NoSuchKey

	if _, err := admin(client, setTo(int32(10))); err != nil {
		t.Fatal(err)
	}
	got, err = admin(client, get)
	if err != nil {
		t.Fatal(err)
	}
	wantField(t, got, bson.D{{Key: "expireAfterSeconds", Value: int64(10)}}, "clusterParameters", "0", "preAndPostImages")
	if tt, _, _ := got.Lookup("clusterParameters", "0", "clusterParameterTime").TimestampOK(); tt == 0 {
		t.Fatalf("clusterParameterTime not set: %s", got)
	}

	ctx := testCtx(t)
	db := client.Database("img")
	if err := db.CreateCollection(ctx, "x", options.CreateCollection().SetChangeStreamPreAndPostImages(preImagesOn)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("x")
	cs := watchColl(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
	mustInsert(t, coll, doc1(int32(1)))
	one := bson.D{{Key: "_id", Value: 1}}
	if _, err := coll.UpdateOne(ctx, one, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	ts.Clock.Advance(11 * time.Second)
	if _, err := coll.DeleteOne(ctx, one); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, cs, "insert")
	// The update's pre-image is older than 10 s when the event is read;
	// the delete's is not.
	wantImage(t, wantEvent(t, cs, "update"), "fullDocumentBeforeChange", nil)
	wantImage(t, wantEvent(t, cs, "delete"), "fullDocumentBeforeChange", doc1(int32(2)))
}
