package server

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestAggregateDatabase runs pipelines of a database ({aggregate: 1})
// through a driver: $documents makes the documents, and stages that need a
// collection are refused there, as $documents is on a collection.
func TestAggregateDatabase(t *testing.T) {
	_, client, _ := startTestServer(t)
	ctx := context.Background()
	db := client.Database("test")
	cur, err := db.Aggregate(ctx, bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}}}},
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "s", Value: bson.D{{Key: "$sum", Value: "$x"}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0]["s"] != int32(3) {
		t.Errorf("$documents then $group: %v, want [{_id: null, s: 3}]", got)
	}

	var ce mongo.CommandError
	_, err = db.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{}}}})
	if !errors.As(err, &ce) || ce.Code != 73 {
		t.Errorf("$match on the database: %v, want InvalidNamespace (73)", err)
	}
	_, err = db.Collection("c").Aggregate(ctx, bson.A{bson.D{{Key: "$documents", Value: bson.A{}}}})
	if !errors.As(err, &ce) || ce.Code != 73 {
		t.Errorf("$documents on a collection: %v, want InvalidNamespace (73)", err)
	}
}
