package record

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
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
		{"a.0", `{"a": [{"0": 1}]}`, ``, false, AmbiguousFieldName},
		{"a.0", `{"a": [1, {"0": 2}]}`, ``, false, AmbiguousFieldName},
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
		{"a.2", `{"a": [[1, 2, 5], {"2": 6}]}`, `[null, 6]`, true, 0},
	}
	for _, tt := range tests {
		spec, _ := bson.Marshal(bson.D{{Key: tt.path, Value: 1}})
		ix, err := CompileIndex(IndexMeta{Key: spec})
		if err != nil {
			t.Fatal(err)
		}
		keys, multi, err := ix.Keys(keygenDoc(t, tt.doc))
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

// TestCompoundIndexKeys checks compound keys against MongoDB's key generator
// tests: fields that reach the same array expand it together, missing
// branches give null, and fields that reach different arrays are refused.
func TestCompoundIndexKeys(t *testing.T) {
	tests := []struct {
		pattern, doc string
		keys         string // a JSON array of keys, each an array of field values
		err          mongoerr.Code
	}{
		{`{"a.b.c": 1}`, `{"a": [1, 2, {"b": {"c": [3, 4]}}]}`, `[[null], [3], [4]]`, 0},
		{`{"a.b.c": 1, "a.b.d": 1}`, `{"a": [1, 2, {"b": {"c": [3, 4], "d": 5}}]}`, `[[null, null], [3, 5], [4, 5]]`, 0},
		{`{"a": 1, "a.b": 1}`, `{"a": [1, {"b": [2, 3, 4]}]}`, `[[1, null], [{"b": [2, 3, 4]}, 2], [{"b": [2, 3, 4]}, 3], [{"b": [2, 3, 4]}, 4]]`, 0},
		{`{"a.b": 1, "a": 1}`, `{"a": []}`, `[[null, {"$undefined": true}]]`, 0},
		{`{"a.b": 1, "a.c": 1}`, `{"a": [{"b": 1, "c": 2}, {"b": 3, "c": 4}]}`, `[[1, 2], [3, 4]]`, 0},
		{`{"a": 1, "b": 1}`, `{"a": [], "b": []}`, ``, mongoerr.CannotIndexParallelArrays},
		{`{"a": 1, "b": 1}`, `{"a": [], "b": [1, 2, 3]}`, ``, mongoerr.CannotIndexParallelArrays},
		{`{"a.b.c": 1, "a.b.d": 1}`, `{"a": [{"b": [{"c": [1, 2, 3], "d": []}]}]}`, ``, mongoerr.CannotIndexParallelArrays},
		{`{"a.a": 1, "b.a": 1}`, `{"a": {"a": [1]}, "b": {"a": [1]}}`, ``, mongoerr.CannotIndexParallelArrays},
	}
	for _, tt := range tests {
		ix, err := CompileIndex(IndexMeta{Key: keygenDoc(t, tt.pattern)})
		if err != nil {
			t.Fatal(err)
		}
		keys, _, err := ix.Keys(keygenDoc(t, tt.doc))
		if tt.err != 0 {
			if mongoerr.CodeOf(err) != tt.err {
				t.Errorf("%s of %s: error %v, want code %d", tt.pattern, tt.doc, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s of %s: %v", tt.pattern, tt.doc, err)
			continue
		}
		var want [][]byte
		for _, k := range keygenValues(t, tt.keys) {
			var enc []byte
			for _, v := range keygenValues(t, k.Array().String()) {
				enc = keycodec.Append(enc, v)
			}
			want = append(want, enc)
		}
		slices.SortFunc(keys, bytes.Compare)
		slices.SortFunc(want, bytes.Compare)
		if !slices.EqualFunc(keys, want, bytes.Equal) {
			t.Errorf("%s of %s: keys %q, want %s", tt.pattern, tt.doc, keys, tt.keys)
		}
	}
}

// TestCompoundKeysOfOneArrayAreNotMultiplied: fields reaching the same array
// make one key per element, not one per pair of elements, so a large array
// cannot make a document's keys grow with its square.
func TestCompoundKeysOfOneArrayAreNotMultiplied(t *testing.T) {
	ix, err := CompileIndex(IndexMeta{Key: keygenDoc(t, `{"a.b": 1, "a.c": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	var arr bson.A
	for i := range 1000 {
		arr = append(arr, bson.D{{Key: "b", Value: i}, {Key: "c", Value: -i}})
	}
	doc, err := bson.Marshal(bson.D{{Key: "a", Value: arr}})
	if err != nil {
		t.Fatal(err)
	}
	keys, multi, err := ix.Keys(doc)
	if err != nil || !multi || len(keys) != len(arr) {
		t.Fatalf("%d keys (multikey %v, error %v), want %d", len(keys), multi, err, len(arr))
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

// positionalValues returns a generator of small random values, nested up to
// three levels, whose documents use the field names "a", "b", "0" and "1", so
// that numeric path components meet both array positions and field names.
func positionalValues(rng *rand.Rand) func(depth int) any {
	names := []string{"a", "b", "0", "1"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rng.IntN(6); {
		case depth >= 3 || n < 2:
			return int32(rng.IntN(3))
		case n < 4:
			arr := bson.A{}
			for range rng.IntN(3) {
				arr = append(arr, gen(depth+1))
			}
			return arr
		default:
			var d bson.D
			for _, name := range names {
				if rng.IntN(2) == 0 {
					d = append(d, bson.E{Key: name, Value: gen(depth + 1)})
				}
			}
			return d
		}
	}
	return gen
}

// TestIndexKeysCoverMatchedValues checks, on generated documents, the
// property the planner relies on: every value other than an array that a
// query path reaches (as the matcher walks it) is a key of an index on that
// path, unless MongoDB refuses to index the document; and a document that
// does not make the index multikey has a single key.
func TestIndexKeysCoverMatchedValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 5))
	gen := positionalValues(rng)
	paths := []string{"a", "a.0", "a.1", "a.b", "a.0.b", "a.b.0", "a.0.0", "a.1.0.b", "0.1", "a.01"}
	checked := 0
	for range 3000 {
		doc, err := bson.Marshal(bson.D{{Key: "a", Value: gen(0)}, {Key: "0", Value: gen(1)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			spec, _ := bson.Marshal(bson.D{{Key: path, Value: 1}})
			ix, err := CompileIndex(IndexMeta{Key: spec})
			if err != nil {
				t.Fatal(err)
			}
			encoded, multi, err := ix.Keys(doc)
			if mongoerr.CodeOf(err) == AmbiguousFieldName {
				continue
			}
			if err != nil {
				t.Fatalf("%s of %s: %v", path, bson.Raw(doc), err)
			}
			keys := map[string]bool{}
			for _, k := range encoded {
				keys[string(k)] = true
			}
			if !multi && len(keys) > 1 {
				t.Errorf("%s of %s: %d keys without an array expansion", path, bson.Raw(doc), len(keys))
			}
			query.WalkPath(doc, path, func(v bsoncore.Value) bool {
				if v.Type != bsoncore.TypeArray && !keys[string(keycodec.Append(nil, v))] {
					t.Errorf("%s of %s: the matcher reaches %s, which is not a key", path, bson.Raw(doc), v)
				}
				checked++
				return true
			})
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d values checked", checked)
	}
}
