package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCreateExistingCollectionIsIdempotent checks that create of a collection
// that exists succeeds when the options are the same and fails with
// NamespaceExists (48) only when they differ, as in MongoDB 7
// (src/mongo/db/catalog/create_collection.cpp, checkCollectionOptions;
// jstests/core/ddl/create_collection.js).
func TestCreateExistingCollectionIsIdempotent(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	if err := db.CreateCollection(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "plain"); err != nil {
		t.Errorf("second create with the same (no) options: %v, want ok", err)
	}
	validator := bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}
	withValidator := options.CreateCollection().SetValidator(validator).SetValidationLevel("moderate")
	if err := db.CreateCollection(ctx, "checked", withValidator); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "checked", withValidator); err != nil {
		t.Errorf("second create with the same options: %v, want ok", err)
	}
	// The same options in another order are still the same options.
	reordered := bson.D{{Key: "create", Value: "checked"}, {Key: "validationLevel", Value: "moderate"}, {Key: "validator", Value: validator}}
	if err := db.RunCommand(ctx, reordered).Err(); err != nil {
		t.Errorf("create with the same options reordered: %v, want ok", err)
	}

	wantCode(t, db.CreateCollection(ctx, "plain", withValidator), 48)
	wantCode(t, db.CreateCollection(ctx, "checked"), 48)
	wantCode(t, db.CreateCollection(ctx, "checked", options.CreateCollection().SetValidator(validator)), 48)
}
