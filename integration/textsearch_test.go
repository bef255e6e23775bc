package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestNodeDriverTextSearch runs a Node.js application's text search: a
// text index, a $text find sorted by its score, an aggregation projecting
// the score, and the error without a text index.
func TestNodeDriverTextSearch(t *testing.T) {
	runNodeScript(t, "textsearch.mjs", startServer(t).URI)
}

// TestExplainTextAndHashed: explain shows a $text query as TEXT_MATCH over
// TEXT_OR over the text index's IXSCAN, with the parsed query, and an
// equality on a hashed field as an IXSCAN of the hashed index.
func TestExplainTextAndHashed(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	db := ts.NewClient(t).Database("explain")
	coll := db.Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "about", Value: "coffee shop"}, {Key: "h", Value: 5}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "about", Value: "text"}}},
		{Keys: bson.D{{Key: "h", Value: "hashed"}}},
	}); err != nil {
		t.Fatal(err)
	}
	explain := func(filter bson.D) bson.Raw {
		var res bson.Raw
		err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: filter}}}}).Decode(&res)
		if err != nil {
			t.Fatal(err)
		}
		return res.Lookup("queryPlanner", "winningPlan").Document()
	}
	plan := explain(bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "coffee -tea"}}}})
	if plan.Lookup("stage").StringValue() != "TEXT_MATCH" || plan.Lookup("inputStage", "stage").StringValue() != "TEXT_OR" ||
		plan.Lookup("inputStage", "inputStage", "indexName").StringValue() != "about_text" {
		t.Errorf("$text plan: %v", plan)
	}
	if terms := plan.Lookup("parsedTextQuery", "terms").Array().String(); terms != `["coffe"]` {
		t.Errorf("parsed terms %s", terms)
	}
	plan = explain(bson.D{{Key: "h", Value: 5}})
	if plan.Lookup("inputStage", "stage").StringValue() != "IXSCAN" || plan.Lookup("inputStage", "indexName").StringValue() != "h_hashed" {
		t.Errorf("hashed plan: %v", plan)
	}
	// The bounds are the point of the hash of 42, -944302157085130861 (the
	// value MongoDB's hasher checks itself against at startup).
	plan = explain(bson.D{{Key: "h", Value: 42}})
	if b := plan.Lookup("inputStage", "indexBounds", "h").Array().String(); b != `["[-944302157085130861, -944302157085130861]"]` {
		t.Errorf("hashed bounds %s", b)
	}
	plan = explain(bson.D{{Key: "h", Value: bson.D{{Key: "$gt", Value: 5}}}})
	if plan.Lookup("stage").StringValue() != "COLLSCAN" {
		t.Errorf("a range on a hashed field: %v", plan)
	}
}
