package integration

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
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
		{"same name and key, other options", false, []bson.D{spec(key("a"), "ix", bson.E{Key: "expireAfterSeconds", Value: 10}), spec(key("a"), "ix", bson.E{Key: "expireAfterSeconds", Value: 20})}, 85},
		// MongoDB leaves hidden out of the comparison (index_descriptor.cpp).
		{"same name and key, hidden differs", false, []bson.D{spec(key("a"), "ix"), spec(key("a"), "ix", bson.E{Key: "hidden", Value: true})}, 68},
		{"the same index twice, new collection", false, []bson.D{spec(key("a"), "ix"), spec(key("a"), "ix")}, 68},
		{"the same index twice, non-empty collection", true, []bson.D{spec(key("a"), "ix"), spec(key("a"), "ix")}, 96},
		// The server derives no default name: FailedToParse, as in
		// MongoDB's validateIndexSpec (index_key_validate.cpp).
		{"an index without a name", true, []bson.D{{{Key: "key", Value: key("a")}}}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coll := db.Collection(strings.ReplaceAll(tc.name, " ", "_"))
			if tc.docs {
				mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
			}
			_, err := createIndexesErr(coll, tc.specs...)
			wantCode(t, err, tc.code)
			// A refused command builds none of its indexes, and creates no
			// collection.
			if tc.docs {
				if names := indexNames(t, coll); len(names) != 1 {
					t.Fatalf("indexes after a refused command: %v", names)
				}
			} else if names, _ := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: coll.Name()}}); len(names) != 0 {
				t.Fatalf("a refused command created %v", names)
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
	r, err := createIndexesErr(coll, spec(key("_id"), "_id_"), spec(key("a"), "a_ix"), spec(key("c"), "c_ix"))
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

// TestListIndexesEchoesOptions checks that listIndexes shows every option
// given at creation the way MongoDB stores it (unique and hidden first and
// as booleans, the simple collation, ns and dropDups dropped, everything
// else as given), and that the options survive a restart.
func TestListIndexesEchoesOptions(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("trust").Collection("opts")
	partial := bson.D{{Key: "p", Value: bson.D{{Key: "$gt", Value: 5}}}}
	storage := bson.D{{Key: "wiredTiger", Value: bson.D{{Key: "configString", Value: "block_compressor=zstd"}}}}
	createIndex(t, coll, bson.D{
		{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_ix"},
		{Key: "sparse", Value: 1}, {Key: "unique", Value: 1}, {Key: "background", Value: true},
		{Key: "storageEngine", Value: storage}, {Key: "ns", Value: "trust.opts"}, {Key: "dropDups", Value: true},
		{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}},
	})
	createIndex(t, coll, bson.D{
		{Key: "v", Value: 2}, {Key: "name", Value: "p_ix"}, {Key: "key", Value: bson.D{{Key: "p", Value: -1}}},
		{Key: "partialFilterExpression", Value: partial}, {Key: "hidden", Value: true},
	})
	createIndex(t, coll, bson.D{
		{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_ttl"},
		{Key: "expireAfterSeconds", Value: 3600}, {Key: "unique", Value: false}, {Key: "hidden", Value: false},
		{Key: "default_language", Value: "english"}, {Key: "bits", Value: 26},
	})
	// Unknown options are refused, or dropped on request.
	_, err := createIndexesErr(coll, bson.D{{Key: "key", Value: bson.D{{Key: "q", Value: 1}}}, {Key: "name", Value: "q"}, {Key: "bogus", Value: 1}})
	wantCode(t, err, 197)
	run(t, coll.Database(), bson.D{{Key: "createIndexes", Value: "opts"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "q", Value: 1}}}, {Key: "name", Value: "q_ix"}, {Key: "bogus", Value: 1}},
	}}, {Key: "ignoreUnknownIndexOptions", Value: true}})

	mustMarshal := func(d bson.D) string {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return bson.Raw(raw).String()
	}
	want := []string{
		mustMarshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}),
		mustMarshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "unique", Value: true}, {Key: "key", Value: bson.D{{Key: "u", Value: int32(1)}}}, {Key: "name", Value: "u_ix"},
			{Key: "sparse", Value: int32(1)}, {Key: "background", Value: true}, {Key: "storageEngine", Value: storage}}),
		mustMarshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "hidden", Value: true}, {Key: "key", Value: bson.D{{Key: "p", Value: int32(-1)}}}, {Key: "name", Value: "p_ix"},
			{Key: "partialFilterExpression", Value: partial}}),
		mustMarshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "at", Value: int32(1)}}}, {Key: "name", Value: "at_ttl"},
			{Key: "expireAfterSeconds", Value: int32(3600)}, {Key: "default_language", Value: "english"}, {Key: "bits", Value: int32(26)}}),
		mustMarshal(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "q", Value: int32(1)}}}, {Key: "name", Value: "q_ix"}}),
	}
	check := func(when string) {
		t.Helper()
		got := listIndexes(t, coll)
		if len(got) != len(want) {
			t.Fatalf("%s: listIndexes %v", when, got)
		}
		for i := range want {
			if got[i].String() != want[i] {
				t.Errorf("%s: index %d\n got %s\nwant %s", when, i, got[i], want[i])
			}
		}
	}
	check("after creation")
	ts.Restart(t)
	coll = ts.Client.Database("trust").Collection("opts")
	check("after restart")
	// collMod's new expireAfterSeconds is what listIndexes shows.
	run(t, coll.Database(), bson.D{{Key: "collMod", Value: "opts"}, {Key: "index", Value: bson.D{{Key: "name", Value: "at_ttl"}, {Key: "expireAfterSeconds", Value: 60}}}})
	if n, _ := listIndexes(t, coll)[3].Lookup("expireAfterSeconds").AsInt64OK(); n != 60 {
		t.Fatalf("after collMod: %v", listIndexes(t, coll)[3])
	}
}

// TestIndexSpecValidation checks createIndexes's refusals of malformed
// specifications with MongoDB's codes.
func TestIndexSpecValidation(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("trust").Collection("specs")
	compound := func(n int) bson.D {
		var k bson.D
		for i := 0; i < n; i++ {
			k = append(k, bson.E{Key: "f" + strconv.Itoa(i), Value: 1 - 2*(i%2)})
		}
		return k
	}
	longKey := bson.D{{Key: strings.Repeat("x", 2100), Value: 1}}
	for _, tc := range []struct {
		name string
		spec bson.D
		code int
	}{
		{"33 fields", bson.D{{Key: "key", Value: compound(33)}, {Key: "name", Value: "big"}}, 13103},
		{"key pattern over 2048 bytes", bson.D{{Key: "key", Value: longKey}, {Key: "name", Value: "long"}}, 67},
		{"field twice in the key", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "a", Value: -1}}}, {Key: "name", Value: "aa"}}, 2},
		{"empty name", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: ""}}, 67},
		{"hidden not a bool", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a"}, {Key: "hidden", Value: 1}}, 14},
		{"unique a string", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a"}, {Key: "unique", Value: "yes"}}, 14},
		{"weights on a non-text index", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a"}, {Key: "weights", Value: bson.D{{Key: "a", Value: 1}}}}, 67},
		{"index version 3", bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a"}, {Key: "v", Value: 3}}, 67},
		{"empty key path part", bson.D{{Key: "key", Value: bson.D{{Key: "a..b", Value: 1}}}, {Key: "name", Value: "a"}}, 67},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createIndexesErr(coll, tc.spec)
			wantCode(t, err, tc.code)
		})
	}
	// The limit is 32 fields: exactly 32 are fine and work.
	createIndex(t, coll, bson.D{{Key: "key", Value: compound(32)}, {Key: "name", Value: "max"}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "f0", Value: 1}, {Key: "f31", Value: 2}})
	wantIDs(t, coll, bson.D{{Key: "f0", Value: 1}}, 1)
	if v := run(t, coll.Database(), bson.D{{Key: "validate", Value: "specs"}}); !v.Lookup("valid").Boolean() {
		t.Fatalf("validate: %v", v)
	}
}

// TestCreateRefusesUnsupportedKinds checks that create refuses the kinds of
// collection Lethe does not have, instead of making an ordinary collection
// that silently lacks their behaviour.
func TestCreateRefusesUnsupportedKinds(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int
	}{
		{"capped", bson.D{{Key: "create", Value: "c1"}, {Key: "capped", Value: true}, {Key: "size", Value: 4096}, {Key: "max", Value: 10}}, 115},
		{"time series", bson.D{{Key: "create", Value: "c2"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}}, 115},
		{"clustered", bson.D{{Key: "create", Value: "c3"}, {Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}}, 115},
		{"collection expiry", bson.D{{Key: "create", Value: "c5"}, {Key: "expireAfterSeconds", Value: 60}}, 72},
		{"capped not a bool", bson.D{{Key: "create", Value: "c6"}, {Key: "capped", Value: "yes"}}, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, db.RunCommand(ctx, tc.cmd).Err(), tc.code)
		})
	}
	err := db.CreateCollection(ctx, "c7", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<20))
	wantCode(t, err, 115)
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil || len(names) != 0 {
		t.Fatalf("collections after refused creates: %v %v", names, err)
	}
	run(t, db, bson.D{{Key: "create", Value: "plain"}, {Key: "capped", Value: false}})
	err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "plain"}, {Key: "expireAfterSeconds", Value: 60}}).Err()
	wantCode(t, err, 72)
}
