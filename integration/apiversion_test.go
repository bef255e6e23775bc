package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAPIStrict checks the Stable API as MongoDB enforces it
// (src/mongo/db/validate_api_parameters.cpp; docs/reference/
// stable-api-changelog): with apiStrict a command outside version 1, such
// as distinct, fails with APIStrictError (323), and so does an aggregation
// stage outside it, such as $listLocalSessions; the commands of version 1
// work; apiVersion other than "1" is APIVersionError (322); apiStrict
// without apiVersion is 4886600.
func TestAPIStrict(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	strict := ts.NewClient(t, options.Client().SetServerAPIOptions(options.ServerAPI(options.ServerAPIVersion1).SetStrict(true)))
	coll := strict.Database("test").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}); err != nil {
		t.Fatalf("insert under apiStrict: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("countDocuments (aggregate) under apiStrict: %d, %v", n, err)
	}
	if _, err := coll.Find(ctx, bson.D{}); err != nil {
		t.Fatalf("find under apiStrict: %v", err)
	}
	wantCode(t, coll.Distinct(ctx, "a", bson.D{}).Err(), 323)
	wantCode(t, strict.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Err(), 323)
	_, err := strict.Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}})
	wantCode(t, err, 323)

	// Without strict, the same commands run under apiVersion 1.
	loose := ts.NewClient(t, options.Client().SetServerAPIOptions(options.ServerAPI(options.ServerAPIVersion1)))
	if err := loose.Database("test").Collection("c").Distinct(ctx, "a", bson.D{}).Err(); err != nil {
		t.Errorf("distinct under apiVersion 1 without strict: %v", err)
	}

	db := ts.Client.Database("test")
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: "2"}}).Err(), 322)
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "apiStrict", Value: true}}).Err(), 4886600)
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "apiVersion", Value: 1}}).Err(), 14)
}
