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

// TestCreateIndexesRefusesBadSpecs checks two refusals of MongoDB's
// validateIndexSpec (src/mongo/db/catalog/index_key_validate.cpp): a spec
// without a name is FailedToParse (9), and options other than name, v and
// collation on the _id key pattern are InvalidIndexSpecificationOption
// (197), whatever the index is called.
func TestCreateIndexesRefusesBadSpecs(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	create := func(spec bson.D) error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{spec}}}).Err()
	}
	wantCode(t, create(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}), 9)
	idKey := bson.D{{Key: "_id", Value: 1}}
	wantCode(t, create(bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}, {Key: "unique", Value: true}}), 197)
	wantCode(t, create(bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "other"}, {Key: "unique", Value: true}}), 197)
	wantCode(t, create(bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "name", Value: "x"}, {Key: "sparse", Value: true}}), 197)
	// A descending _id key is the _id pattern too, and the _id index is
	// ascending: BadValue (validateIdIndexSpec).
	wantCode(t, create(bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "name", Value: "x"}}), 2)
	// The _id index itself, named, is still accepted, and so is a hashed _id.
	if err := create(bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}}); err != nil {
		t.Errorf("createIndexes of the _id index: %v", err)
	}
	if err := create(bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}, {Key: "unique", Value: true}}); err != nil {
		t.Errorf("createIndexes with a name: %v", err)
	}
}
