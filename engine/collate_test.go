package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

var enStrength2 = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}

// jstests/core/collation.js: a query uses an index with a collation only
// when it has the same collation, and an index's entries are collation
// keys, so a unique index refuses strings equal under its collation.
func TestCollatedIndexPlanAndUnique(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "user", Value: 1}}}, {Key: "name", Value: "user_ci"},
		{Key: "unique", Value: true}, {Key: "collation", Value: enStrength2}})
	if _, err := e.CreateIndexes(ctx, "db", "users", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Insert(ctx, "db", "users", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "user", Value: "Alice"}})}, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	res, err := e.Insert(ctx, "db", "users", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "user", Value: "alice"}})}, true)
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	if mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
		t.Fatalf("alice after Alice: %v, want a duplicate key", err)
	}
	filter := mustRaw(t, bson.D{{Key: "user", Value: "ALICE"}})
	for _, tc := range []struct {
		coll  bson.D
		stage string
		n     int64
	}{
		{enStrength2, "IXSCAN", 1},
		{nil, "COLLSCAN", 0},
		{bson.D{{Key: "locale", Value: "en"}}, "COLLSCAN", 0},
		{bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 2}}, "COLLSCAN", 1},
	} {
		qctx := ctx
		if tc.coll != nil {
			qctx = WithCollation(ctx, mustRaw(t, tc.coll))
		}
		ex, err := e.Explain(qctx, "db", "users", FindSpec{Filter: filter}, true)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Stage != tc.stage || ex.NReturned != tc.n {
			t.Errorf("collation %v: %s returning %d, want %s returning %d", tc.coll, ex.Stage, ex.NReturned, tc.stage, tc.n)
		}
	}
	// A sort on the field uses the index only under its collation.
	ex, err := e.Explain(WithCollation(ctx, mustRaw(t, enStrength2)), "db", "users", FindSpec{Sort: mustRaw(t, bson.D{{Key: "user", Value: 1}})}, false)
	if err != nil || ex.Stage != "IXSCAN" || ex.Sort {
		t.Errorf("collated sort: %+v %v, want the index's order", ex, err)
	}
	ex, err = e.Explain(ctx, "db", "users", FindSpec{Sort: mustRaw(t, bson.D{{Key: "user", Value: 1}})}, false)
	if err != nil || !ex.Sort {
		t.Errorf("simple sort: %+v %v, want a blocking sort", ex, err)
	}
	// Numbers bound a collated index under any collation.
	ex, err = e.Explain(ctx, "db", "users", FindSpec{Filter: mustRaw(t, bson.D{{Key: "user", Value: 5}})}, false)
	if err != nil || ex.Stage != "IXSCAN" {
		t.Errorf("number on a collated index: %+v %v", ex, err)
	}
	specs, err := e.ListIndexes(ctx, "db", "users")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := bson.Marshal(specs[1])
	if v, err := bson.Raw(got).LookupErr("collation", "version"); err != nil || v.StringValue() != "57.1" {
		t.Errorf("listIndexes: %s, want the normalised collation", bson.Raw(got))
	}
}

// jstests/core/collation.js: a collection's default collation applies to
// queries that name none and to indexes that name none; {locale:
// "simple"} on an index or a query overrides it.
func TestDefaultCollation(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	opts := mustRaw(t, bson.D{{Key: "collation", Value: enStrength2}})
	if err := e.CreateCollection(ctx, "db", "c", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Insert(ctx, "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "str", Value: "foo"}})}, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	filter := mustRaw(t, bson.D{{Key: "str", Value: "FOO"}})
	if n, err := e.Count(ctx, "db", "c", filter, 0, 0, bson.RawValue{}); err != nil || n != 1 {
		t.Errorf("count under the default: %d %v, want 1", n, err)
	}
	simple := WithCollation(ctx, mustRaw(t, bson.D{{Key: "locale", Value: "simple"}}))
	if n, err := e.Count(simple, "db", "c", filter, 0, 0, bson.RawValue{}); err != nil || n != 0 {
		t.Errorf("count under simple: %d %v, want 0", n, err)
	}
	vals, err := e.Distinct(ctx, "db", "c", "str", nil)
	if err != nil || len(vals) != 1 {
		t.Errorf("distinct: %v %v", vals, err)
	}
	if _, err := e.Insert(ctx, "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "str", Value: "FOO"}})}, true); err != nil {
		t.Fatal(err)
	}
	if vals, err := e.Distinct(ctx, "db", "c", "str", nil); err != nil || len(vals) != 1 {
		t.Errorf("distinct of foo and FOO under strength 2: %v %v, want one value", vals, err)
	}
	if n, err := e.Delete(ctx, "db", "c", filter, 0, bson.RawValue{}); err != nil || n != 2 {
		t.Errorf("delete under the default: %d %v, want 2", n, err)
	}
	inherit := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	own := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}})
	if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{inherit, own}); err != nil {
		t.Fatal(err)
	}
	specs, err := e.ListIndexes(ctx, "db", "c")
	if err != nil || len(specs) != 3 {
		t.Fatal(specs, err)
	}
	for i, want := range []bool{true, true, false} {
		raw, _ := bson.Marshal(specs[i])
		_, err := bson.Raw(raw).LookupErr("collation")
		if (err == nil) != want {
			t.Errorf("index %d %s: collation listed %v, want %v", i, bson.Raw(raw), err == nil, want)
		}
	}
	// create stores the collation normalised.
	bad := mustRaw(t, bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "xx"}}}})
	if err := e.CreateCollection(ctx, "db", "d", CreateOptions{Raw: bad}); mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Errorf("create with locale xx: %v", err)
	}
}

// A sort under a collation orders the same in memory, spilled to disk and
// kept to its first k (sort records carry the collation keys then), and
// the same as the collated comparison of the documents.
func TestCollatedSortSpillsInOrder(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	words := []string{"b", "A", "a", "é", "E", "e", "c", "B", "Ab", "ab"}
	var docs []bson.Raw
	for i := range 3000 {
		docs = append(docs, mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "s", Value: words[i%len(words)] + string(rune('a'+i%26))},
			{Key: "pad", Value: string(make([]byte, 100))}}))
	}
	if res, err := e.Insert(ctx, "db", "c", docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	sortSpec := mustRaw(t, bson.D{{Key: "s", Value: -1}, {Key: "_id", Value: 1}})
	cctx := WithCollation(ctx, mustRaw(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}))
	run := func(spec FindSpec) []bson.Raw {
		t.Helper()
		cur, err := e.Find(cctx, "db", "c", spec)
		if err != nil {
			t.Fatal(err)
		}
		all, err := cur.All(cctx)
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	inMemory := run(FindSpec{Sort: sortSpec})
	e.sortLimit = 16 << 10
	spilled := run(FindSpec{Sort: sortSpec, AllowDiskUse: true})
	topK := run(FindSpec{Sort: sortSpec, AllowDiskUse: true, Limit: 50})
	if len(inMemory) != 3000 || len(spilled) != 3000 || len(topK) != 50 {
		t.Fatalf("%d, %d and %d documents", len(inMemory), len(spilled), len(topK))
	}
	coll, _ := e.commandCollator(cctx, nil)
	for i := range inMemory {
		if string(inMemory[i]) != string(spilled[i]) || i < 50 && string(inMemory[i]) != string(topK[i]) {
			t.Fatalf("document %d differs: %s, %s", i, inMemory[i], spilled[i])
		}
		if i > 0 {
			a, b := inMemory[i-1].Lookup("s"), inMemory[i].Lookup("s")
			if coll.CompareStrings([]byte(a.StringValue()), []byte(b.StringValue())) < 0 {
				t.Fatalf("%q before %q in a descending sort", a.StringValue(), b.StringValue())
			}
		}
	}
}

// A collation named again reuses its collator; a refused one is refused
// again; the cache starts over past its bound.
func TestCollatorCache(t *testing.T) {
	var c collatorCache
	doc := mustRaw(t, enStrength2)
	a, err := c.parse(doc)
	if err != nil || a == nil {
		t.Fatal(a, err)
	}
	if b, _ := c.parse(doc); b != a {
		t.Error("the same document made another collator")
	}
	bad := mustRaw(t, bson.D{{Key: "locale", Value: "xx"}})
	for range 2 {
		if _, err := c.parse(bad); mongoerr.CodeOf(err) != mongoerr.BadValue {
			t.Errorf("locale xx: %v", err)
		}
	}
	for i := range maxCachedCollators + 1 {
		// Distinct documents: the strength and the options vary.
		if _, err := c.parse(mustRaw(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2 + i%4}, {Key: "caseLevel", Value: i%2 == 0}, {Key: "numericOrdering", Value: i%8 >= 4}, {Key: "backwards", Value: i%16 >= 8}, {Key: "alternate", Value: []string{"shifted", "non-ignorable"}[i%32/16]}, {Key: "normalization", Value: i >= 32}})); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m) > maxCachedCollators {
		t.Errorf("%d collators cached, bound %d", len(c.m), maxCachedCollators)
	}
}

// A collection's validator compares strings under the collection's
// default collation, as mongod parses it with the collection's collator
// (derived from collection_impl.cpp's validator parsing).
func TestValidatorUnderDefaultCollation(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	opts := mustRaw(t, bson.D{{Key: "validator", Value: bson.D{{Key: "s", Value: "foo"}}}, {Key: "collation", Value: enStrength2}})
	if err := e.CreateCollection(ctx, "db", "v", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Insert(ctx, "db", "v", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "FOO"}})}, true)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("FOO under a validator of foo at strength 2: %v %v", err, res.Errors)
	}
	res, err = e.Insert(ctx, "db", "v", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "bar"}})}, true)
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	if mongoerr.CodeOf(err) != mongoerr.DocumentValidationFailure {
		t.Fatalf("bar: %v, want DocumentValidationFailure", err)
	}
}
