package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// collUUID returns the UUID listCollections shows for db.name.
func collUUID(t *testing.T, db *mongo.Database, name string) bson.Binary {
	t.Helper()
	specs, err := db.ListCollectionSpecifications(testCtx(t), bson.D{{Key: "name", Value: name}})
	if err != nil || len(specs) != 1 || specs[0].UUID == nil {
		t.Fatalf("listCollections %s: %v %v", name, specs, err)
	}
	return *specs[0].UUID
}

// TestChangeStreamRenameDropTarget: renaming over an existing collection
// is one rename event whose operationDescription (showExpandedEvents)
// names the replaced collection's UUID as dropTarget, with no drop event
// of the target before it; a stream on the target sees that rename and
// its invalidate. MongoDB: jstests/change_streams/show_expanded_events.js
// ("'dropTarget: true' when target collection exists") and
// metadata_notifications.js ("using the 'dropTarget' option with an
// existing target collection"); rename_collection.cpp logs one entry.
func TestChangeStreamRenameDropTarget(t *testing.T) {
	_, client := startReplSet(t)
	db := client.Database("csren")
	mustInsert(t, db.Collection("src"), bson.D{{Key: "_id", Value: 1}})
	mustInsert(t, db.Collection("dst"), bson.D{{Key: "_id", Value: 2}})
	dropped := collUUID(t, db, "dst")
	whole, err := db.Watch(testCtx(t), mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close(context.Background())
	onTarget := watchColl(t, db.Collection("dst"), nil)

	run(t, client.Database("admin"), bson.D{{Key: "renameCollection", Value: "csren.src"}, {Key: "to", Value: "csren.dst"}, {Key: "dropTarget", Value: true}})
	ev := wantEvent(t, whole, "rename")
	wantField(t, ev, bson.D{{Key: "db", Value: "csren"}, {Key: "coll", Value: "src"}}, "ns")
	wantField(t, ev, bson.D{
		{Key: "to", Value: bson.D{{Key: "db", Value: "csren"}, {Key: "coll", Value: "dst"}}},
		{Key: "dropTarget", Value: dropped},
	}, "operationDescription")
	ev = wantEvent(t, onTarget, "rename")
	wantField(t, ev, bson.D{{Key: "db", Value: "csren"}, {Key: "coll", Value: "dst"}}, "to")
	wantEvent(t, onTarget, "invalidate")

	// The renamed collection holds the source's documents only.
	wantIDs(t, db.Collection("dst"), bson.D{}, 1)
	// Without a target, operationDescription has no dropTarget.
	mustInsert(t, db.Collection("other"), bson.D{{Key: "_id", Value: 3}})
	wantEvent(t, whole, "create")
	wantEvent(t, whole, "insert")
	run(t, client.Database("admin"), bson.D{{Key: "renameCollection", Value: "csren.other"}, {Key: "to", Value: "csren.fresh"}, {Key: "dropTarget", Value: true}})
	ev = wantEvent(t, whole, "rename")
	wantField(t, ev, bson.D{{Key: "to", Value: bson.D{{Key: "db", Value: "csren"}, {Key: "coll", Value: "fresh"}}}}, "operationDescription")
}

// TestChangeStreamPipelineStageErrors: after $changeStream, a stage name
// mongod does not know fails to parse with 40324, as in any pipeline
// (DocumentSource::parse), before the change stream refuses a known
// stage it does not allow with IllegalOperation (Pipeline::validateCommon
// in pipeline.cpp); a stage document must have exactly one field (40323).
func TestChangeStreamPipelineStageErrors(t *testing.T) {
	_, client := startReplSet(t)
	coll := client.Database("cs").Collection("stages")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	for _, c := range []struct {
		stage bson.D
		code  int
	}{
		{bson.D{{Key: "$noSuchStage", Value: bson.D{}}}, 40324},
		{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}}}}, 20},
		{bson.D{{Key: "$match", Value: bson.D{}}, {Key: "$project", Value: bson.D{{Key: "a", Value: 1}}}}, 40323},
		{bson.D{}, 40323},
	} {
		_, err := coll.Watch(testCtx(t), mongo.Pipeline{c.stage})
		wantCode(t, err, c.code)
	}
}

// TestChangeStreamNonResumableLabel: a change stream's fatal error (280)
// and its lost history (286) carry the NonResumableChangeStreamError
// label, which tells drivers not to resume: MongoDB's error_codes.yml puts
// both in that category and error_labels.cpp labels every reply with it.
func TestChangeStreamNonResumableLabel(t *testing.T) {
	_, client := startReplSet(t)
	coll := client.Database("cs").Collection("label")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	wantLabel := func(err error, code int) {
		t.Helper()
		wantCode(t, err, code)
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorLabel("NonResumableChangeStreamError") {
			t.Fatalf("error %v without the NonResumableChangeStreamError label", err)
		}
	}
	noID := watchColl(t, coll, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if noID.Next(ctx) {
		t.Fatalf("event without its _id delivered: %s", noID.Current)
	}
	wantLabel(noID.Err(), 280)
	_, err := coll.Watch(testCtx(t), mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(&bson.Timestamp{T: 1, I: 0}))
	wantLabel(err, 286)
}
