package integration

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// validationErrInfo returns the errInfo of a DocumentValidationFailure,
// failing the test if err is not one.
func validationErrInfo(t *testing.T, err error) bson.Raw {
	t.Helper()
	wantCode(t, err, 121)
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return we.WriteErrors[0].Details
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Raw.Lookup("errInfo").Document()
	}
	t.Fatalf("no errInfo in %v", err)
	return nil
}

var personSchema = bson.D{{Key: "$jsonSchema", Value: bson.D{
	{Key: "bsonType", Value: "object"},
	{Key: "required", Value: bson.A{"name"}},
	{Key: "properties", Value: bson.D{
		{Key: "name", Value: bson.D{{Key: "bsonType", Value: "string"}}},
		{Key: "age", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 0}}},
	}},
}}}

// TestValidatorEnforcedOnEveryWritePath checks that a collection validator
// refuses invalid documents from inserts, updates of every kind, upserts
// and findAndModify, with code 121 and errInfo, and that
// bypassDocumentValidation lets them through.
func TestValidatorEnforcedOnEveryWritePath(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	run(t, db, bson.D{{Key: "create", Value: "people"}, {Key: "validator", Value: personSchema}})
	coll := db.Collection("people")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "ann"}, {Key: "age", Value: 30}})

	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "age", Value: 3}})
	info := validationErrInfo(t, err)
	if id, _ := info.Lookup("failingDocumentId").AsInt64OK(); id != 2 {
		t.Errorf("failingDocumentId: %v", info)
	}
	if op, _ := info.Lookup("details", "operatorName").StringValueOK(); op != "$jsonSchema" {
		t.Errorf("operatorName: %v", info)
	}
	rules, _ := info.Lookup("details", "schemaRulesNotSatisfied").Array().Values()
	if len(rules) != 1 || rules[0].Document().Lookup("operatorName").StringValue() != "required" ||
		rules[0].Document().Lookup("missingProperties").Array().Index(0).StringValue() != "name" {
		t.Errorf("schemaRulesNotSatisfied: %v", info)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "bo"}, {Key: "age", Value: -4}})
	info = validationErrInfo(t, err)
	if info.Lookup("details", "schemaRulesNotSatisfied").Array().Index(0).Document().Lookup("propertiesNotSatisfied").Array().Index(0).Document().Lookup("propertyName").StringValue() != "age" {
		t.Errorf("propertiesNotSatisfied: %v", info)
	}

	// An unordered batch keeps the valid documents.
	res, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "cy"}},
		bson.D{{Key: "_id", Value: 4}},
		bson.D{{Key: "_id", Value: 5}, {Key: "name", Value: "di"}},
	}, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 || bwe.WriteErrors[0].Code != 121 || len(res.InsertedIDs) != 2 {
		t.Fatalf("unordered insert: %v %v", res, err)
	}

	one := bson.D{{Key: "_id", Value: 1}}
	for name, write := range map[string]func() error{
		"$set": func() error {
			_, err := coll.UpdateOne(ctx, one, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: -1}}}})
			return err
		},
		"replacement": func() error {
			_, err := coll.ReplaceOne(ctx, one, bson.D{{Key: "age", Value: 1}})
			return err
		},
		"pipeline": func() error {
			_, err := coll.UpdateOne(ctx, one, mongo.Pipeline{{{Key: "$unset", Value: "name"}}})
			return err
		},
		"multi": func() error {
			_, err := coll.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: "name", Value: ""}}}})
			return err
		},
		"upsert": func() error {
			_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 9}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
			return err
		},
		"findAndModify": func() error {
			return coll.FindOneAndUpdate(ctx, one, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: 5}}}}).Err()
		},
		"findAndModify upsert": func() error {
			return coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 9}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 1}}}}, options.FindOneAndUpdate().SetUpsert(true)).Err()
		},
		"findAndModify replace": func() error {
			return coll.FindOneAndReplace(ctx, one, bson.D{{Key: "age", Value: 1}}).Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			validationErrInfo(t, write())
		})
	}
	wantIDs(t, coll, bson.D{}, 1, 3, 5)
	if n := count(t, coll, bson.D{{Key: "name", Value: bson.D{{Key: "$type", Value: "string"}}}}); n != 3 {
		t.Fatalf("a refused write changed a document: %d named", n)
	}

	// bypassDocumentValidation lets every path through.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 10}}, options.InsertOne().SetBypassDocumentValidation(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, one, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: -1}}}}, options.UpdateOne().SetBypassDocumentValidation(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 11}}, bson.D{{Key: "$set", Value: bson.D{{Key: "age", Value: 1}}}}, options.UpdateOne().SetUpsert(true).SetBypassDocumentValidation(true)); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "name", Value: ""}}}}, options.FindOneAndUpdate().SetBypassDocumentValidation(true)).Err(); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, coll, bson.D{{Key: "name", Value: bson.D{{Key: "$exists", Value: false}}}}, 3, 10, 11)
	// Deletes are never validated.
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 10}}); err != nil {
		t.Fatal(err)
	}
	// The validator survives a restart.
	ts.Restart(t)
	coll = ts.Client.Database("trust").Collection("people")
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 20}})
	validationErrInfo(t, err)
}

// TestValidationLevelAndAction checks moderate, off and warn, collMod's
// changes of them, and how listCollections shows them.
func TestValidationLevelAndAction(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	coll := db.Collection("levels")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 10}})
	validator := bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}}
	run(t, db, bson.D{{Key: "collMod", Value: "levels"}, {Key: "validator", Value: validator}, {Key: "validationLevel", Value: "moderate"}})

	// Moderate: the document that already failed may keep failing; the
	// valid one may not become invalid; inserts are checked.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}}}}); err != nil {
		t.Fatalf("moderate update of an invalid document: %v", err)
	}
	_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 3}}}})
	info := validationErrInfo(t, err)
	if op, _ := info.Lookup("details", "operatorName").StringValueOK(); op != "$gt" {
		t.Errorf("operatorName: %v", info)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 0}})
	validationErrInfo(t, err)

	// listCollections shows the options.
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "levels"}})
	if err != nil || len(specs) != 1 {
		t.Fatal(specs, err)
	}
	opts := specs[0].Options
	if opts.Lookup("validationLevel").StringValue() != "moderate" || opts.Lookup("validator", "a", "$gt").Type == 0 {
		t.Fatalf("options %v", opts)
	}

	// Warn: the write goes through and the server logs it.
	run(t, db, bson.D{{Key: "collMod", Value: "levels"}, {Key: "validationAction", Value: "warn"}, {Key: "validationLevel", Value: "strict"}})
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: 0}}); err != nil {
		t.Fatalf("warn insert: %v", err)
	}
	if ts.Logs.FilterMessage("Document would fail validation").Len() != 1 {
		t.Fatalf("no validation warning logged:\n%s", dumpLogs(ts))
	}
	// Off: nothing is checked.
	run(t, db, bson.D{{Key: "collMod", Value: "levels"}, {Key: "validationAction", Value: "error"}, {Key: "validationLevel", Value: "off"}})
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "a", Value: 0}}); err != nil {
		t.Fatalf("level off insert: %v", err)
	}
	// Strict error again, with an $expr validator.
	run(t, db, bson.D{{Key: "collMod", Value: "levels"}, {Key: "validationLevel", Value: "strict"},
		{Key: "validator", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{"$a", 100}}}}}}})
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 6}, {Key: "a", Value: 500}})
	if op, _ := validationErrInfo(t, err).Lookup("details", "operatorName").StringValueOK(); op != "$expr" {
		t.Errorf("operatorName for $expr: %v", err)
	}
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 7}, {Key: "a", Value: 50}})
	// An empty validator removes validation.
	run(t, db, bson.D{{Key: "collMod", Value: "levels"}, {Key: "validator", Value: bson.D{}}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 8}, {Key: "a", Value: 500}})
}

// TestInvalidValidatorsRefused checks that create and collMod refuse bad
// validation settings with MongoDB's codes and change nothing.
func TestInvalidValidatorsRefused(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	for _, tc := range []struct {
		name string
		opts bson.D
		code int
	}{
		{"unknown operator", bson.D{{Key: "validator", Value: bson.D{{Key: "$foo", Value: 1}}}}, 2},
		{"$where", bson.D{{Key: "validator", Value: bson.D{{Key: "$where", Value: "true"}}}}, 224},
		{"nested $text", bson.D{{Key: "validator", Value: bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: "x"}}}}}}}}}, 224},
		{"not an object", bson.D{{Key: "validator", Value: 5}}, 14},
		{"bad level", bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "validationLevel", Value: "lax"}}, 2},
		{"bad action", bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "validationAction", Value: "shout"}}, 2},
		{"bad schema", bson.D{{Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "bsonType", Value: "nonsense"}}}}}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := db.RunCommand(ctx, append(bson.D{{Key: "create", Value: "bad"}}, tc.opts...)).Err()
			if errCode(err) == 0 {
				t.Fatalf("create accepted %v", tc.opts)
			}
			wantCode(t, err, tc.code)
			if names, _ := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "bad"}}); len(names) != 0 {
				t.Fatalf("refused create made %v", names)
			}
		})
	}
	run(t, db, bson.D{{Key: "create", Value: "good"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}})
	err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "good"}, {Key: "validator", Value: bson.D{{Key: "$foo", Value: 1}}}}).Err()
	wantCode(t, err, 2)
	// The old validator still applies.
	_, err = db.Collection("good").InsertOne(ctx, bson.D{{Key: "a", Value: 2}})
	validationErrInfo(t, err)
}

// TestValidateCountsNonCompliantDocuments checks that validate reports the
// documents a validator added later refuses, as a warning, not an error.
func TestValidateCountsNonCompliantDocuments(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	coll := db.Collection("noncompliant")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 10}})
	run(t, db, bson.D{{Key: "collMod", Value: "noncompliant"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}}}})
	v := run(t, db, bson.D{{Key: "validate", Value: "noncompliant"}})
	if n, _ := v.Lookup("nNonCompliantDocuments").AsInt64OK(); n != 1 || !v.Lookup("valid").Boolean() {
		t.Fatalf("validate: %v", v)
	}
	if warnings, _ := v.Lookup("warnings").Array().Values(); len(warnings) != 1 {
		t.Fatalf("warnings: %v", v)
	}
}
