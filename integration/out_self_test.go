package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestOutOntoItsSource: $out may name the collection the pipeline reads
// (MongoDB's $out writes a temporary collection and renames it over the
// target, docs "$out (aggregation)": "replaces the existing collection"),
// and the aggregation that did so succeeds: $out reads all of its input
// before it writes, so the rename kills no plan still reading the source.
// Lethe used to answer QueryPlanKilled (175) after the replacement was
// committed. $merge into its source likewise succeeds.
func TestOutOntoItsSource(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	coll := ts.Client.Database("test").Collection("out_self")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}}, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 3}})

	// A streaming pipeline: $match then $out, nothing blocking before it.
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 2}}}}}},
		{{Key: "$out", Value: "out_self"}},
	})
	if err != nil {
		t.Fatalf("$out onto its source: %v", err)
	}
	if cur.Next(ctx) || cur.Err() != nil {
		t.Fatalf("$out returned documents or failed: %v", cur.Err())
	}
	cur.Close(ctx)
	wantIDs(t, coll, bson.D{}, 2, 3)
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 {
		t.Fatalf("the replaced collection has indexes %v (%v), want _id_ and a_1", specs, err)
	}

	// $merge into the source.
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$set", Value: bson.D{{Key: "b", Value: true}}}},
		{{Key: "$merge", Value: "out_self"}},
	})
	if err != nil {
		t.Fatalf("$merge into its source: %v", err)
	}
	cur.Close(ctx)
	if n := count(t, coll, bson.D{{Key: "b", Value: true}}); n != 2 {
		t.Errorf("$merge into its source marked %d documents, want 2", n)
	}
}
