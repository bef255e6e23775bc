package engine

import (
	"bytes"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
)

// TestPositionalIndexKeys checks the keys of indexes on paths with numeric
// components against MongoDB's own key generator tests
// (src/mongo/db/index/btree_key_generator_test.cpp): a component that names
// an array element selects it, a selected array at the end of the path is
// one key, a component that names no element is a field name in the element
// documents, and a number naming both is refused.
func TestPositionalIndexKeys(t *testing.T) {
	tests := []struct {
		path, doc string
		keys      string // a JSON array of the expected keys
		multi     bool
		err       mongoerr.Code
	}{
		{"a.0", `{"a": [1]}`, `[1]`, false, 0},
		{"a.0", `{"a": [[1]]}`, `[[1]]`, false, 0},
		{"a.0", `{"a": [[]]}`, `[{"$undefined": true}]`, false, 0},
		{"a.0", `{"a": {"0": 1}}`, `[1]`, false, 0},
		{"a.0", `{"a": [{"0": 1}]}`, ``, false, ambiguousFieldName},
		{"a.0", `{"a": [1, {"0": 2}]}`, ``, false, ambiguousFieldName},
		{"a.0.0", `{"a": [[1]]}`, `[1]`, false, 0},
		{"a.0.0", `{"a": [[]]}`, `[null]`, false, 0},
		{"a.0.0", `{"a": []}`, `[null]`, true, 0},
		{"a.0.0", `{"a": [[[]]]}`, `[{"$undefined": true}]`, false, 0},
		{"a.0.b", `{"a": [{"b": 1}]}`, `[1]`, false, 0},
		{"a.0.b", `{"a": [{"b": [1]}]}`, `[1]`, true, 0},
		{"a.0.b", `{"a": [{"b": [[1]]}]}`, `[[1]]`, true, 0},
		{"a.0.b", `{"a": [[{"b": 1}]]}`, `[1]`, true, 0},
		{"a.0.b", `{"a": [[{"b": [[1]]}]]}`, `[[1]]`, true, 0},
		{"a.0.b", `{"a": [[{"b": []}]]}`, `[{"$undefined": true}]`, true, 0},
		{"a.0.b", `{"a": [[{"b": 1}, {"b": 2}]]}`, `[1, 2]`, true, 0},
		{"a.b.c.3", `{"a": {"b": {"c": [0, 1, 2, [3]]}}}`, `[[3]]`, false, 0},
		{"a.b.c.3", `{"a": {"b": {"c": [0, 1, 2, []]}}}`, `[{"$undefined": true}]`, false, 0},
		{"a.0.1.2.b.0", `{"a": [[1, [1, 2, [{"b": [[], 2]}]]], 1]}`, `[{"$undefined": true}]`, true, 0},
		{"a.0.b.0", `{"a": [{"b": [1]}]}`, `[1]`, false, 0},
		{"a.2", `{"a": [{"2": 5}]}`, `[5]`, true, 0},
		{"a.2", `{"a": [[1, 2, 5]]}`, `[null]`, true, 0},
		{"a.2", `{"a": [[1, 2, 5], [3, 4, 6], [0, 1, 2]]}`, `[[0, 1, 2]]`, false, 0},
		{"a.2", `{"a": [{"0": 1, "1": 2, "2": 5}]}`, `[5]`, true, 0},
		{"a.b.2", `{"a": [{"b": [[1, 2, 5]]}]}`, `[null]`, true, 0},
	}
	for _, tt := range tests {
		spec, _ := bson.Marshal(bson.D{{Key: tt.path, Value: 1}})
		ix, err := compileIndex(indexMeta{Key: spec})
		if err != nil {
			t.Fatal(err)
		}
		keys, multi, err := ix.keys(keygenDoc(t, tt.doc))
		if tt.err != 0 {
			if mongoerr.CodeOf(err) != tt.err {
				t.Errorf("%s of %s: error %v, want code %d", tt.path, tt.doc, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s of %s: %v", tt.path, tt.doc, err)
			continue
		}
		var want [][]byte
		for _, v := range keygenValues(t, tt.keys) {
			want = append(want, keycodec.Append(nil, v))
		}
		slices.SortFunc(keys, bytes.Compare)
		slices.SortFunc(want, bytes.Compare)
		if !slices.EqualFunc(keys, want, bytes.Equal) || multi != tt.multi {
			t.Errorf("%s of %s: keys %q multikey %v, want %s multikey %v", tt.path, tt.doc, keys, multi, tt.keys, tt.multi)
		}
	}
}

func keygenDoc(t *testing.T, s string) bson.Raw {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return d
}

func keygenValues(t *testing.T, s string) []bsoncore.Value {
	t.Helper()
	vals, err := bsoncore.Array(keygenDoc(t, `{"v": `+s+`}`).Lookup("v").Array()).Values()
	if err != nil {
		t.Fatal(err)
	}
	return vals
}
