package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestAggregateJoinsAndWriters runs $lookup, $unionWith, $out and $merge
// through the Go driver, which sends the write concern and
// bypassDocumentValidation of the aggregates that write.
func TestAggregateJoinsAndWriters(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("app")
	orders, items := db.Collection("orders"), db.Collection("items")
	mustInsert(t, orders,
		bson.D{{Key: "_id", Value: 1}, {Key: "item", Value: "a"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "item", Value: "b"}})
	mustInsert(t, items, bson.D{{Key: "_id", Value: "a"}, {Key: "price", Value: 3}})

	cur, err := orders.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "items"}, {Key: "localField", Value: "item"}, {Key: "foreignField", Value: "_id"}, {Key: "as", Value: "i"}}}},
		{{Key: "$unionWith", Value: "items"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil || len(got) != 3 {
		t.Fatalf("$lookup and $unionWith: %v %v", got, err)
	}
	if joined := got[0]["i"].(bson.A); len(joined) != 1 {
		t.Fatalf("order 1 joined %v", joined)
	}

	// The target refuses documents without a price, which bypass lets in.
	validator := bson.D{{Key: "price", Value: bson.D{{Key: "$exists", Value: true}}}}
	if err := db.CreateCollection(ctx, "report", options.CreateCollection().SetValidator(validator)); err != nil {
		t.Fatal(err)
	}
	majority := db.Collection("orders", options.Collection().SetWriteConcern(writeconcern.Majority()))
	out := mongo.Pipeline{{{Key: "$merge", Value: bson.D{{Key: "into", Value: "report"}}}}}
	if _, err := majority.Aggregate(ctx, out); err == nil {
		t.Fatal("$merge of invalid documents succeeded")
	}
	cur, err = majority.Aggregate(ctx, out, options.Aggregate().SetBypassDocumentValidation(true))
	if err != nil {
		t.Fatal(err)
	}
	if cur.Next(ctx) {
		t.Fatalf("$merge returned %v", cur.Current)
	}
	if n, err := db.Collection("report").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("report holds %d documents: %v", n, err)
	}
	if _, err := orders.Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "copy"}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Collection("copy").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("$out copy holds %d documents: %v", n, err)
	}
}
