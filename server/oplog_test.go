package server

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestOplogThroughDriver reads local.oplog.rs the way tools inspect it:
// the newest entries first, filtered by namespace.
func TestOplogThroughDriver(t *testing.T) {
	_, client, _ := startTestServer(t)
	ctx := context.Background()
	coll := client.Database("test").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	oplogColl := client.Database("local").Collection("oplog.rs")
	cur, err := oplogColl.Find(ctx, bson.D{{Key: "ns", Value: "test.c"}}, options.Find().SetSort(bson.D{{Key: "$natural", Value: -1}}).SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		TS   bson.Timestamp `bson:"ts"`
		T    int64          `bson:"t"`
		Op   string         `bson:"op"`
		NS   string         `bson:"ns"`
		UI   bson.Binary    `bson:"ui"`
		O    bson.Raw       `bson:"o"`
		O2   bson.Raw       `bson:"o2"`
		Wall bson.DateTime  `bson:"wall"`
	}
	if err := cur.All(ctx, &entries); err != nil {
		t.Fatal(err)
	}
	var ops string
	for i, e := range entries {
		ops += e.Op
		if e.T != 1 || e.UI.Subtype != bson.TypeBinaryUUID || e.Wall == 0 {
			t.Errorf("entry %d: %+v", i, e)
		}
		if i > 0 && !entries[i-1].TS.After(e.TS) {
			t.Errorf("entry %d at %v not before entry %d at %v", i, e.TS, i-1, entries[i-1].TS)
		}
	}
	if ops != "uii" || entries[0].O2.Lookup("_id").Int32() != 1 {
		t.Fatalf("newest first: ops %q, update of %s", ops, entries[0].O2)
	}
	// An aggregation reads it too, with any sort.
	agg, err := oplogColl.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "op", Value: "i"}}}},
		{{Key: "$sort", Value: bson.D{{Key: "o._id", Value: -1}}}},
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "id", Value: "$o._id"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []bson.M
	if err := agg.All(ctx, &ids); err != nil || len(ids) != 2 || ids[0]["id"] != int32(2) {
		t.Fatalf("aggregate: %v, %v", ids, err)
	}
	_, err = oplogColl.InsertOne(ctx, bson.D{{Key: "op", Value: "n"}})
	var ce mongo.CommandError
	var we mongo.WriteException
	switch {
	case errors.As(err, &ce) && ce.Code == 73:
	case errors.As(err, &we) && len(we.WriteErrors) == 1 && we.WriteErrors[0].Code == 73:
	default:
		t.Fatalf("insert into the oplog: %v", err)
	}
}
