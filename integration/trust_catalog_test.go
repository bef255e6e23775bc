package integration

import (
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestValidateReply checks the validate command's reply shape on an intact
// collection with a few indexes, with and without full, and its errors.
func TestValidateReply(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("trust")
	coll := db.Collection("v")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"a", "b"}}}, bson.D{{Key: "_id", Value: 2}, {Key: "u", Value: 5}})
	run(t, db, bson.D{{Key: "createIndexes", Value: "v"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}},
	}}})
	for _, full := range []bool{false, true} {
		v := run(t, db, bson.D{{Key: "validate", Value: "v"}, {Key: "full", Value: full}})
		if ns, _ := v.Lookup("ns").StringValueOK(); ns != "trust.v" {
			t.Errorf("ns %v", v.Lookup("ns"))
		}
		if !v.Lookup("valid").Boolean() || v.Lookup("repaired").Boolean() {
			t.Fatalf("validate full=%v: %v", full, v)
		}
		for field, want := range map[string]int64{"nrecords": 2, "nIndexes": 3, "nInvalidDocuments": 0, "nNonCompliantDocuments": 0,
			"keysPerIndex._id_": 2, "keysPerIndex.tags_1": 3, "keysPerIndex.u_1": 1} {
			got, ok := v.Lookup(splitPath(field)...).AsInt64OK()
			if !ok || got != want {
				t.Errorf("validate full=%v: %s = %v, want %d", full, field, v.Lookup(splitPath(field)...), want)
			}
		}
		for _, name := range []string{"_id_", "tags_1", "u_1"} {
			if ok, _ := v.Lookup("indexDetails", name, "valid").BooleanOK(); !ok {
				t.Errorf("indexDetails.%s.valid: %v", name, v.Lookup("indexDetails"))
			}
		}
		for _, arr := range []string{"warnings", "errors", "extraIndexEntries", "missingIndexEntries", "corruptRecords"} {
			vals, err := v.Lookup(arr).Array().Values()
			if err != nil || len(vals) != 0 {
				t.Errorf("%s: %v", arr, v.Lookup(arr))
			}
		}
		if _, _, ok := v.Lookup("uuid").BinaryOK(); !ok {
			t.Errorf("uuid: %v", v.Lookup("uuid"))
		}
	}
	err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "missing"}}).Err()
	wantCode(t, err, 26) // NamespaceNotFound
	err = db.RunCommand(ctx, bson.D{{Key: "validate", Value: "v"}, {Key: "full", Value: true}, {Key: "background", Value: true}}).Err()
	wantCode(t, err, 72) // InvalidOptions
	err = db.RunCommand(ctx, bson.D{{Key: "validate", Value: "v"}, {Key: "bogus", Value: 1}}).Err()
	wantCode(t, err, 40415)
}

func splitPath(p string) []string { return strings.Split(p, ".") }

// createIndexesErr runs createIndexes with the given specs and returns the
// reply or the error.
func createIndexesErr(coll *mongo.Collection, specs ...bson.D) (bson.Raw, error) {
	a := bson.A{}
	for _, s := range specs {
		a = append(a, s)
	}
	return coll.Database().RunCommand(ctx, bson.D{{Key: "createIndexes", Value: coll.Name()}, {Key: "indexes", Value: a}}).Raw()
}

func indexNames(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	var names []string
	for _, s := range listIndexes(t, coll) {
		names = append(names, s.Lookup("name").StringValue())
	}
	return names
}

// TestCreateIndexesConflicts checks MongoDB's rules for index specs that
// clash with each other within one createIndexes command or with existing
// indexes: a name is one index, a key pattern with the same identifying
// options (unique, sparse, partial filter, collation) is one index.
func TestCreateIndexesConflicts(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	key := func(f string) bson.D { return bson.D{{Key: f, Value: 1}} }
	spec := func(k bson.D, name string, opts ...bson.E) bson.D {
		return append(bson.D{{Key: "key", Value: k}, {Key: "name", Value: name}}, opts...)
	}

	for _, tc := range []struct {
		name  string
		docs  bool // the collection exists and holds a document
		specs []bson.D
		code  int
	}{
		{"same name, other key", false, []bson.D{spec(key("a"), "ix"), spec(key("b"), "ix")}, 86},
		{"same name, other key, non-empty", true, []bson.D{spec(key("a"), "ix"), spec(key("b"), "ix")}, 86},
		{"same key, other name", false, []bson.D{spec(key("a"), "one"), spec(key("a"), "two")}, 85},
		{"same key, other name, non-empty", true, []bson.D{spec(key("a"), "one"), spec(key("a"), "two")}, 85},
		{"same name and key, other options", false, []bson.D{spec(key("a"), "ix"), spec(key("a"), "ix", bson.E{Key: "hidden", Value: true})}, 85},
		{"the same index twice, new collection", false, []bson.D{spec(key("a"), "ix"), spec(key("a"), "ix")}, 68},
		{"the same index twice, non-empty collection", true, []bson.D{spec(key("a"), "ix"), spec(key("a"), "ix")}, 96},
		{"the same default-named index twice", true, []bson.D{{{Key: "key", Value: key("a")}}, {{Key: "key", Value: key("a")}}}, 96},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll := db.Collection(strings.ReplaceAll(tc.name, " ", "_"))
			if tc.docs {
				mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
			}
			_, err := createIndexesErr(coll, tc.specs...)
			wantCode(t, err, tc.code)
			// A refused command builds none of its indexes.
			if tc.docs {
				if names := indexNames(t, coll); len(names) != 1 {
					t.Fatalf("indexes after a refused command: %v", names)
				}
			}
		})
	}

	coll := db.Collection("existing")
	createIndex(t, coll, spec(key("a"), "a_ix"))
	createIndex(t, coll, spec(key("t"), "t_ix", bson.E{Key: "expireAfterSeconds", Value: 60}))
	for _, tc := range []struct {
		name string
		spec bson.D
		code int
	}{
		{"existing name, other key", spec(key("b"), "a_ix"), 86},
		{"existing name, key with another field", spec(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, "a_ix"), 86},
		{"existing name, other identifying option", spec(key("a"), "a_ix", bson.E{Key: "unique", Value: true}), 86},
		{"existing key, other name", spec(key("a"), "b_ix"), 85},
		{"existing name and key, other expireAfterSeconds", spec(key("t"), "t_ix", bson.E{Key: "expireAfterSeconds", Value: 30}), 85},
		{"existing key, other name and expireAfterSeconds", spec(key("t"), "t2", bson.E{Key: "expireAfterSeconds", Value: 30}), 85},
		{"the _id index's name, other key", spec(key("a"), "_id_"), 86},
		{"the _id index's key, other name", spec(key("_id"), "myid"), 85},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createIndexesErr(coll, tc.spec)
			wantCode(t, err, tc.code)
		})
	}
	// Identical requests are no-ops; one new index among existing ones is
	// built with MongoDB's note.
	r := createIndex(t, coll, spec(key("a"), "a_ix"))
	if note, _ := r.Lookup("note").StringValueOK(); note != "all indexes already exist" {
		t.Fatalf("identical request: %v", r)
	}
	r, err := createIndexesErr(coll, bson.D{{Key: "key", Value: key("_id")}}, spec(key("a"), "a_ix"), spec(key("c"), "c_ix"))
	if err != nil {
		t.Fatal(err)
	}
	if note, _ := r.Lookup("note").StringValueOK(); note != "index already exists" || r.Lookup("numIndexesAfter").Int32() != 4 {
		t.Fatalf("partly existing request: %v", r)
	}
	// The same key with another identifying option is another index.
	createIndex(t, coll, spec(key("a"), "a_unique", bson.E{Key: "unique", Value: true}))
	if names := indexNames(t, coll); !slices.Equal(names, []string{"_id_", "a_ix", "t_ix", "c_ix", "a_unique"}) {
		t.Fatalf("indexes %v", names)
	}
}
