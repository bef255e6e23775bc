package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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
