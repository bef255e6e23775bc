package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// TestIndexesAnswerLikeCollectionScans runs generated filters over generated
// documents with numeric field names and nested arrays, through every index
// (single, positional and compound) and through a collection scan, and
// requires the same documents each way: an index may bound a scan, never
// change its answer.
func TestIndexesAnswerLikeCollectionScans(t *testing.T) {
	e := openTestEngine(t)
	rng := rand.New(rand.NewPCG(3, 14))
	gen := positionalValues(rng)
	patterns := []bson.D{
		{{Key: "a", Value: 1}},
		{{Key: "a.0", Value: 1}},
		{{Key: "a.1", Value: -1}},
		{{Key: "a.b", Value: 1}},
		{{Key: "a.0.b", Value: 1}},
		{{Key: "a.b.0", Value: 1}},
		{{Key: "a.b", Value: 1}, {Key: "a.0", Value: 1}},
		{{Key: "a.0", Value: 1}, {Key: "a.1", Value: 1}},
		{{Key: "b", Value: 1}, {Key: "a.b", Value: 1}},
		{{Key: "a.b", Value: 1}, {Key: "b", Value: 1}},
		{{Key: "a.b", Value: 1}, {Key: "a.a", Value: 1}},
		{{Key: "a", Value: 1}, {Key: "a.b", Value: 1}},
	}
	var hints []string
	for i, p := range patterns {
		name := fmt.Sprintf("ix%d", i)
		hints = append(hints, name)
		spec, _ := bson.Marshal(bson.D{{Key: "key", Value: p}, {Key: "name", Value: name}})
		if _, err := e.CreateIndexes(context.Background(), "diff", "indexed", []bson.Raw{spec}); err != nil {
			t.Fatal(err)
		}
	}
	var docs []bson.Raw
	for i := range 400 {
		doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: gen(0)}, {Key: "b", Value: gen(1)}})
		docs = append(docs, doc)
	}
	res, err := e.Insert(context.Background(), "diff", "indexed", docs, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, we := range slices.Backward(res.Errors) {
		// MongoDB refuses these documents as well.
		if code := mongoerr.CodeOf(we.Err); code != record.AmbiguousFieldName && code != mongoerr.CannotIndexParallelArrays {
			t.Fatalf("insert %s: %v", docs[we.Index], we.Err)
		}
		docs = slices.Delete(docs, we.Index, we.Index+1)
	}
	if len(docs) < 100 {
		t.Fatalf("only %d documents could be indexed", len(docs))
	}
	if res, err := e.Insert(context.Background(), "diff", "plain", docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatalf("insert: %v %v", err, res.Errors)
	}
	paths := []string{"a", "a.0", "a.1", "a.a", "a.b", "a.0.b", "a.b.0", "b", "a.0.0"}
	ops := []string{"$eq", "$gt", "$gte", "$lt", "$lte", "$in"}
	predicate := func(path string) bson.E {
		op := ops[rng.IntN(len(ops))]
		var v any = int32(rng.IntN(3))
		if op == "$in" {
			v = bson.A{int32(rng.IntN(3)), int32(rng.IntN(3))}
		}
		return bson.E{Key: path, Value: bson.D{{Key: op, Value: v}}}
	}
	ctx := context.Background()
	find := func(coll string, filter bson.Raw, hint string) []string {
		spec := FindSpec{Filter: filter}
		if hint != "" {
			spec.Hint = bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, hint)}
		}
		cur, err := e.Find(ctx, "diff", coll, spec)
		if err != nil {
			t.Fatalf("find %s hint %q: %v", filter, hint, err)
		}
		docs, err := cur.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range docs {
			ids = append(ids, d.Lookup("_id").String())
		}
		slices.Sort(ids)
		return ids
	}
	for range 200 {
		// Half the filters name the fields of one index, to bound it.
		var f bson.D
		if p := patterns[rng.IntN(len(patterns))]; rng.IntN(2) == 0 {
			for _, field := range p {
				f = append(f, predicate(field.Key))
			}
		} else {
			f = bson.D{predicate(paths[rng.IntN(len(paths))])}
			if rng.IntN(2) == 0 {
				f = append(f, predicate(paths[rng.IntN(len(paths))]))
			}
		}
		filter, _ := bson.Marshal(f)
		want := find("plain", filter, "")
		for _, hint := range append([]string{""}, hints...) {
			if got := find("indexed", filter, hint); !slices.Equal(got, want) {
				t.Errorf("filter %s hint %q: %d documents, a collection scan finds %d", bson.Raw(filter), hint, len(got), len(want))
			}
		}
	}
}

// TestPositionalIndexProvidesSort: an index on a.0 that no document made
// multikey gives the order of a sort by a.0, which must be the order a
// blocking sort gives: nested arrays whole, documents with field 0, empty
// arrays as undefined, missing values as null. (No two documents tie: the
// order of ties is not defined.)
func TestPositionalIndexProvidesSort(t *testing.T) {
	e := openTestEngine(t)
	docs := []bson.Raw{
		keygenDoc(t, `{"_id": 1, "a": [[1, 2], 3]}`),
		keygenDoc(t, `{"_id": 2, "a": [0]}`),
		keygenDoc(t, `{"_id": 3, "a": {"0": 5}}`),
		keygenDoc(t, `{"_id": 4, "a": [{"1": 1}]}`),
		keygenDoc(t, `{"_id": 6}`),
		keygenDoc(t, `{"_id": 7, "a": [[]]}`),
		keygenDoc(t, `{"_id": 8, "a": [[0, 9], 1]}`),
		keygenDoc(t, `{"_id": 9, "a": ["x", {"0": 1}]}`),
	}
	for _, coll := range []string{"plain", "indexed"} {
		if res, err := e.Insert(context.Background(), "sorts", coll, docs[:7], true); err != nil || len(res.Errors) > 0 {
			t.Fatalf("insert: %v %v", err, res.Errors)
		}
	}
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "a.0", Value: 1}}}})
	if _, err := e.CreateIndexes(context.Background(), "sorts", "indexed", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	// MongoDB refuses to index the ambiguous document, and so does Lethe.
	if res, _ := e.Insert(context.Background(), "sorts", "indexed", docs[7:], true); len(res.Errors) == 0 || mongoerr.CodeOf(res.Errors[0].Err) != record.AmbiguousFieldName {
		t.Fatalf("insert of an ambiguous document: %v", res.Errors)
	}
	ctx := context.Background()
	for _, dir := range []int{1, -1} {
		sortSpec, _ := bson.Marshal(bson.D{{Key: "a.0", Value: dir}})
		ex, err := e.Explain(ctx, "sorts", "indexed", FindSpec{Sort: sortSpec}, false)
		if err != nil || ex.Stage != "IXSCAN" || ex.Sort {
			t.Fatalf("sort by a.0 (%d) runs as %+v, %v; want the index order", dir, ex, err)
		}
		var orders [2][]string
		for i, coll := range []string{"plain", "indexed"} {
			cur, err := e.Find(ctx, "sorts", coll, FindSpec{Sort: sortSpec})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cur.All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range got {
				orders[i] = append(orders[i], d.Lookup("_id").String())
			}
		}
		if !slices.Equal(orders[0], orders[1]) {
			t.Errorf("sort by a.0 (%d): blocking sort %v, index order %v", dir, orders[0], orders[1])
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

// positionalValues (a copy of engine/record's test helper) returns a generator of small random values, nested up to
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
