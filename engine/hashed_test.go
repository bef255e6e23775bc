package engine

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

func extDoc(t *testing.T, s string) bson.Raw {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return d
}

func createIndex(t *testing.T, e *Engine, coll, spec string) error {
	t.Helper()
	_, err := e.CreateIndexes(context.Background(), "db", coll, []bson.Raw{extDoc(t, spec)})
	return err
}

// TestHashedIndexSpecs: the key patterns and options MongoDB refuses for
// hashed indexes, with its codes.
func TestHashedIndexSpecs(t *testing.T) {
	e := openTestEngine(t)
	for _, c := range []struct {
		spec string
		code mongoerr.Code
	}{
		{`{"key": {"a": "hashed"}}`, 0},
		{`{"key": {"b": "hashed"}, "sparse": true}`, 0},
		{`{"key": {"_id": "hashed"}}`, 0},
		// Compound hashed indexes, MongoDB 4.4+ (jstests/core/index/hashed/compound_hashed_index.js).
		{`{"key": {"c": 1, "d": "hashed", "e": -1}}`, 0},
		// jstests/core/index/hashed/single_field_hashed_index.js
		{`{"key": {"u": "hashed"}, "unique": true}`, record.HashedUnique},
		// src/mongo/db/index/expression_params.cpp parseHashParams
		{`{"key": {"a": "hashed", "b": "hashed"}}`, record.HashedFields},
		{`{"key": {"a": "hashed", "b": "text"}}`, mongoerr.CannotCreateIndex},
		{`{"key": {"a": "hash"}}`, mongoerr.CannotCreateIndex},
	} {
		err := createIndex(t, e, "specs", c.spec)
		if (c.code == 0 && err != nil) || (c.code != 0 && mongoerr.CodeOf(err) != c.code) {
			t.Errorf("%s: got %v, want code %d", c.spec, err, c.code)
		}
	}
}

// TestHashedIndexArrays: a hashed field may reach no array, at its end or
// along its path (jstests/core/index/hashed/single_field_hashed_index.js);
// the other fields of a compound hashed index may.
func TestHashedIndexArrays(t *testing.T) {
	e := openTestEngine(t)
	if err := createIndex(t, e, "arr", `{"key": {"field1.field2.0.field4": "hashed"}}`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{`{"field1": []}`, false},
		{`{"field1": {"field2": []}}`, false},
		{`{"field1": {"field2": {"0": []}}}`, false},
		{`{"field1": [{"field2": {"0": []}}]}`, false},
		{`{"field1": {"field2": {"0": {"field4": []}}}}`, false},
		{`{"field1": {"field2": {"0": {"otherField": []}}}}`, true},
		{`{"field1": {"field2": {"0": {"field4": 1}}}}`, true},
	} {
		res, err := e.Insert(context.Background(), "db", "arr", []bson.Raw{extDoc(t, c.doc)}, true)
		if err != nil {
			t.Fatal(err)
		}
		if c.ok != (len(res.Errors) == 0) {
			t.Errorf("%s: errors %v, want ok %v", c.doc, res.Errors, c.ok)
		}
		if !c.ok && len(res.Errors) == 1 && mongoerr.CodeOf(res.Errors[0].Err) != record.HashedArray {
			t.Errorf("%s: got %v, want code %d", c.doc, res.Errors[0].Err, record.HashedArray)
		}
	}
	if err := createIndex(t, e, "carr", `{"key": {"a": 1, "b": "hashed"}}`); err != nil {
		t.Fatal(err)
	}
	res, err := e.Insert(context.Background(), "db", "carr", []bson.Raw{extDoc(t, `{"a": [1, 2], "b": 3}`)}, true)
	if err != nil || len(res.Errors) > 0 {
		t.Errorf("array in the non-hashed field: %v %v", err, res.Errors)
	}
	// An index build meets the array in a stored document.
	if _, err := e.Insert(context.Background(), "db", "later", []bson.Raw{extDoc(t, `{"a": [1]}`)}, true); err != nil {
		t.Fatal(err)
	}
	if err := createIndex(t, e, "later", `{"key": {"a": "hashed"}}`); mongoerr.CodeOf(err) != record.HashedArray {
		t.Errorf("build over an array: got %v, want code %d", err, record.HashedArray)
	}
}

// TestHashedIndexQueries: a hashed index serves equality and $in, never a
// range or a sort, and finds what a collection scan finds; values with one
// hash (3 and 3.1) are told apart by the filter
// (jstests/core/index/hashed/single_field_hashed_index.js).
func TestHashedIndexQueries(t *testing.T) {
	e := openTestEngine(t)
	var docs []bson.Raw
	for i := 0; i < 10; i++ {
		docs = append(docs, mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}, {Key: "b", Value: i % 3}, {Key: "s", Value: bson.D{{Key: "x", Value: i}}}}))
	}
	docs = append(docs, extDoc(t, `{"_id": 10, "a": 3.1, "b": 1}`), extDoc(t, `{"_id": 11, "b": 2}`), extDoc(t, `{"_id": 12, "a": "3", "b": 0}`))
	for _, coll := range []string{"plain", "hashed", "compound"} {
		if _, err := e.Insert(context.Background(), "db", coll, docs, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := createIndex(t, e, "hashed", `{"key": {"a": "hashed"}}`); err != nil {
		t.Fatal(err)
	}
	if err := createIndex(t, e, "hashed", `{"key": {"s": "hashed"}}`); err != nil {
		t.Fatal(err)
	}
	if err := createIndex(t, e, "compound", `{"key": {"b": 1, "a": "hashed"}}`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		filter, sort string
		// stage is the hashed collection's plan, compound the compound one's.
		stage, compound string
	}{
		{`{"a": 3}`, ``, "IXSCAN", "COLLSCAN"},
		{`{"a": 3.1}`, ``, "IXSCAN", "COLLSCAN"},
		{`{"a": {"$in": [1, 2, "3"]}}`, ``, "IXSCAN", "COLLSCAN"},
		{`{"$and": [{"a": {"$in": [1, 2]}}, {"a": {"$gt": 1}}]}`, ``, "IXSCAN", "COLLSCAN"},
		{`{"s": {"x": 4}}`, ``, "IXSCAN", "COLLSCAN"},
		{`{"a": {"$gt": 3}}`, ``, "COLLSCAN", "COLLSCAN"},
		{`{"a": {"$gte": 3, "$lte": 3}}`, ``, "COLLSCAN", "COLLSCAN"},
		{`{"c": 1}`, ``, "COLLSCAN", "COLLSCAN"},
		{`{"b": 1, "a": 4}`, ``, "IXSCAN", "IXSCAN"},
		{`{"b": 1, "a": {"$gt": 2}}`, ``, "COLLSCAN", "IXSCAN"},
		{`{"b": {"$in": [0, 2]}, "a": {"$in": [2, 3, 5]}}`, ``, "IXSCAN", "IXSCAN"},
		{`{}`, `{"a": 1}`, "COLLSCAN", "COLLSCAN"},
	} {
		spec := FindSpec{Filter: extDoc(t, c.filter)}
		if c.sort != "" {
			spec.Sort = extDoc(t, c.sort)
		}
		want, err := e.findIDs("db", "plain", spec.Filter, spec.Sort)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct{ coll, stage string }{{"hashed", c.stage}, {"compound", c.compound}} {
			got, err := e.findIDs("db", x.coll, spec.Filter, spec.Sort)
			if err != nil {
				t.Fatal(err)
			}
			if c.sort == "" {
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s on %s: got %d documents, want %d", c.filter, c.sort, x.coll, len(got), len(want))
			}
			ex, err := e.Explain(context.Background(), "db", x.coll, spec, false)
			if err != nil {
				t.Fatal(err)
			}
			if ex.Stage != x.stage {
				t.Errorf("%s %s on %s: plan %s, want %s", c.filter, c.sort, x.coll, ex.Stage, x.stage)
			}
			if c.sort != "" && !ex.Sort {
				t.Errorf("%s %s on %s: sorted by a hashed index", c.filter, c.sort, x.coll)
			}
		}
	}
	// A hint of the hashed index reads every document, unsorted.
	got, err := e.Find(context.Background(), "db", "hashed", FindSpec{Hint: bson.RawValue{Type: bson.TypeString, Value: bsoncoreString("a_hashed")}})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := got.All(context.Background())
	if len(all) != len(docs) {
		t.Errorf("hinted hashed index: %d documents, want %d", len(all), len(docs))
	}
}
