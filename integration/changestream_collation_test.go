package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamCollation: the stages after $changeStream run under the
// collation the watch names, also for the events its getMores read, as
// mongod's change stream options let a collation apply to the pipeline
// (https://www.mongodb.com/docs/manual/reference/method/db.collection.watch/).
func TestChangeStreamCollation(t *testing.T) {
	_, client := startReplSet(t)
	coll := client.Database("cs").Collection("coll")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 0}})
	cs := watchColl(t, coll, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "fullDocument.s", Value: "foo"}}}},
	}, options.ChangeStream().SetCollation(options.Collation{Locale: "en", Strength: 2}))
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "bar"}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "FOO"}})
	ev := wantEvent(t, cs, "insert")
	wantField(t, ev, bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "FOO"}}, "fullDocument")
}
