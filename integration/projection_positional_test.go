package integration

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestProjectionPositionalInPath: "$" inside a projected path ("v.$.foo")
// is refused with 31394 in find and in $project, as mongod's
// projection_parser.cpp (parseElement) does since 4.4, rather than
// returning all of v; "v.$" at the end still works.
func TestProjectionPositionalInPath(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	coll := ts.Client.Database("proj").Collection("pos")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.A{
		bson.D{{Key: "foo", Value: 1}, {Key: "bar", Value: 2}},
		bson.D{{Key: "foo", Value: 3}, {Key: "bar", Value: 4}},
	}}})
	filter := bson.D{{Key: "v.foo", Value: 3}}

	err := coll.FindOne(ctx, filter, options.FindOne().SetProjection(bson.D{{Key: "v.$.foo", Value: 1}})).Err()
	wantCode(t, err, 31394)
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "v.$.foo", Value: 1}}}}})
	wantCode(t, err, 31394)

	var got bson.Raw
	if err := coll.FindOne(ctx, filter, options.FindOne().SetProjection(bson.D{{Key: "v.$", Value: 1}})).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: bson.A{bson.D{{Key: "foo", Value: 3}, {Key: "bar", Value: 4}}}}})
	if !bytes.Equal(got, want) {
		t.Fatalf("v.$ projected %s, want %s", got, bson.Raw(want))
	}
}
