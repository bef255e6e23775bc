package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestValidateReportsNonConformantBSON checks that validate with full: true
// or checkBSONConformance: true counts documents holding strings that are
// not UTF-8 in nNonCompliantDocuments and warns once, leaving the
// collection valid, as mongod's ValidateAdaptor::validateRecord does with
// BSONValidateMode::kFull (src/mongo/db/catalog/validate_adaptor.cpp); a
// plain validate does not look.
func TestValidateReportsNonConformantBSON(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	coll := db.Collection("c")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "fine"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "bad \xff byte"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "deep", Value: bson.A{bson.D{{Key: "s", Value: "\xc3"}}}}},
	)
	for _, opts := range []bson.D{
		{{Key: "full", Value: true}},
		{{Key: "checkBSONConformance", Value: true}},
	} {
		reply := run(t, db, append(bson.D{{Key: "validate", Value: "c"}}, opts...))
		if n := lookup(t, reply, "nNonCompliantDocuments").AsInt64(); n != 2 {
			t.Errorf("%v: nNonCompliantDocuments = %d, want 2", opts, n)
		}
		if !lookup(t, reply, "valid").Boolean() {
			t.Errorf("%v: valid = false, want true: %v", opts, reply)
		}
		warnings := mustValues(t, lookup(t, reply, "warnings"))
		if len(warnings) != 1 || warnings[0].StringValue() != "Detected one or more documents in this collection not conformant to BSON specifications. For more info, see logs with log id 6825900" {
			t.Errorf("%v: warnings = %v", opts, warnings)
		}
	}
	reply := run(t, db, bson.D{{Key: "validate", Value: "c"}})
	if n := lookup(t, reply, "nNonCompliantDocuments").AsInt64(); n != 0 {
		t.Errorf("plain validate: nNonCompliantDocuments = %d, want 0", n)
	}
}

// TestNamesMustBeUTF8 checks that database and collection names that are
// not UTF-8, or hold control characters, are refused with InvalidNamespace
// (73), so that listDatabases and listCollections, whose names every driver
// decodes as UTF-8 strings, keep working for every client. MongoDB's
// NamespaceString checks refuse the NUL byte (namespace_string.h); Lethe
// refuses every name a BSON string cannot carry or a client cannot type.
func TestNamesMustBeUTF8(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	for _, c := range []struct{ db, coll string }{
		{"bad\xffdb", "c"},
		{"test", "bad\xffcoll"},
		{"ctl\x01db", "c"},
		{"test", "tab\tcoll"},
		{"test", "line\ncoll"},
	} {
		_, err := ts.Client.Database(c.db).Collection(c.coll).InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
		wantCode(t, err, 73)
		err = ts.Client.Database(c.db).CreateCollection(ctx, c.coll)
		wantCode(t, err, 73)
	}
	mustInsert(t, ts.Client.Database("ok").Collection("fine"), bson.D{{Key: "_id", Value: 1}})
	names, err := ts.Client.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Fatalf("listDatabases: %v", err)
	}
	for _, n := range names {
		if n != "ok" && n != "admin" && n != "config" && n != "local" {
			t.Errorf("listDatabases lists %q", n)
		}
	}
	if _, err := ts.Client.Database("test").ListCollectionNames(ctx, bson.D{}); err != nil {
		t.Errorf("listCollections: %v", err)
	}
}
