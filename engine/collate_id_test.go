package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/kvtest"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// The _id index of a collection created with a default collation has that
// collation (MongoDB's manual, "Collation": "_id index"; mongod gives the
// _id index spec the collection's collator when it creates the
// collection, src/mongo/db/catalog/database_impl.cpp createCollection):
// _id values equal under it are one key, so the second is a duplicate key
// (E11000, code 11000), and equalities on _id match under it. The cases
// are jstests/core/collation.js's "idhack" cases, on every backend and
// across a restart.

// idBackend opens engines on one kv backend; restart closes e and opens
// the same store again.
type idBackend struct {
	name    string
	open    func(t *testing.T) *Engine
	restart func(t *testing.T, e *Engine) *Engine
}

func idBackends(t *testing.T) []idBackend {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// A backend's store gives the options that open its store (again, at
	// a restart); cur is the engine open on it.
	var cur *Engine
	reopen := func(t *testing.T, dir string, store func(t *testing.T) Options) *Engine {
		t.Helper()
		opts := store(t)
		opts.Clock, opts.NoReaper = clk, true
		e, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		cur = e
		return e
	}
	backend := func(name string, setup func(t *testing.T), store func(t *testing.T) Options) idBackend {
		var dir string
		return idBackend{
			name: name,
			open: func(t *testing.T) *Engine {
				setup(t)
				dir = t.TempDir()
				t.Cleanup(func() { cur.Close() })
				return reopen(t, dir, store)
			},
			restart: func(t *testing.T, e *Engine) *Engine {
				e.Close()
				return reopen(t, dir, store)
			},
		}
	}
	var mock *tikvkv.MockCluster
	return []idBackend{
		backend("pebble", func(*testing.T) {}, func(*testing.T) Options { return Options{} }),
		backend("tikv-mock", func(t *testing.T) {
			var err error
			if mock, err = tikvkv.NewMockCluster(tikvkv.FamilySplits("")...); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mock.Close() })
		}, func(t *testing.T) Options {
			s, err := mock.Open(tikvkv.Options{Logger: zap.NewNop()})
			if err != nil {
				t.Fatal(err)
			}
			return Options{Store: kvtest.Contract(s)}
		}),
	}
}

// createCI creates db.c with the case-insensitive collation of
// jstests/core/collation.js ({locale: "en_US", strength: 2}).
func createCI(t *testing.T, e *Engine, coll string) {
	t.Helper()
	opts := mustRaw(t, bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "en_US"}, {Key: "strength", Value: 2}}}})
	if err := e.CreateCollection(context.Background(), "db", coll, CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
}

// insertOne inserts doc and returns its error, the write error included.
func insertOne(ctx context.Context, t *testing.T, e *Engine, coll string, doc bson.D, opts ...WriteOptions) error {
	t.Helper()
	res, err := e.Insert(ctx, "db", coll, []bson.Raw{mustRaw(t, doc)}, true, opts...)
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return err
}

// wantDupID checks that err is MongoDB's duplicate key error of the _id
// index: code 11000, keyPattern {_id: 1}, keyValue the refused _id.
func wantDupID(t *testing.T, what string, err error, id any) {
	t.Helper()
	me, ok := mongoerr.As(err)
	if !ok || me.Code != mongoerr.DuplicateKey {
		t.Fatalf("%s: %v, want DuplicateKey (11000)", what, err)
	}
	got, _ := bson.Marshal(me.Extra)
	want, _ := bson.Marshal(bson.D{{Key: "keyPattern", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "keyValue", Value: bson.D{{Key: "_id", Value: id}}}})
	if string(got) != string(want) {
		t.Fatalf("%s: errInfo %s, want %s", what, bson.Raw(got), bson.Raw(want))
	}
}

func countIDs(ctx context.Context, t *testing.T, e *Engine, coll string, filter bson.D) int64 {
	t.Helper()
	n, err := e.Count(ctx, "db", coll, mustRaw(t, filter), 0, 0, bson.RawValue{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var simpleCollation = bson.D{{Key: "locale", Value: "simple"}}

// jstests/core/collation.js ("Find with idhack should return correct
// results when no collation specified and collection has a default
// collation", and the insert of a duplicate _id under it): "foo" then
// "FOO" is a duplicate key (11000) in a case-insensitive collection, in
// one command or two, for strings inside a document _id too, and still
// after a restart; a number _id is unaffected; validate finds the
// storage sound.
func TestCollatedIDUnique(t *testing.T) {
	for _, b := range idBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			e := b.open(t)
			createCI(t, e, "c")
			if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "foo"}}); err != nil {
				t.Fatal(err)
			}
			wantDupID(t, "FOO after foo", insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "FOO"}}), "FOO")
			res, err := e.Insert(ctx, "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: "bar"}}), mustRaw(t, bson.D{{Key: "_id", Value: "BAR"}})}, false)
			if err != nil || res.N != 1 || len(res.Errors) != 1 || res.Errors[0].Index != 1 {
				t.Fatalf("bar and BAR in one insert: %+v %v, want the second refused", res, err)
			}
			wantDupID(t, "BAR after bar in one insert", res.Errors[0].Err, "BAR")
			if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: bson.D{{Key: "k", Value: "x"}}}}); err != nil {
				t.Fatal(err)
			}
			wantDupID(t, "{k: X} after {k: x}", insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: bson.D{{Key: "k", Value: "X"}}}}), bson.D{{Key: "k", Value: "X"}})
			if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: int32(1)}}); err != nil {
				t.Fatal(err)
			}
			wantDupID(t, "1.0 after 1", insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: 1.0}}), 1.0)

			e = b.restart(t, e)
			wantDupID(t, "FOO after foo, restarted", insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "FOO"}}), "FOO")
			doc, err := e.FindByID(ctx, "db", "c", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "FOO")})
			if err != nil || doc == nil || doc.Lookup("_id").StringValue() != "foo" {
				t.Fatalf("FindByID FOO after a restart: %v %v, want {_id: foo}", doc, err)
			}
			v, err := e.Validate(ctx, "db", "c", true)
			if err != nil || !v.Valid {
				t.Fatalf("validate: %+v %v", v, err)
			}
		})
	}
}

// jstests/core/collation.js ("Find with idhack ...", "Find on _id should
// use idhack stage when query inherits collection default collation",
// "Find on _id should return correct results when query collation
// differs from collection default collation"): an _id equality matches
// under the collection's collation through its _id index (IDHACK);
// under {locale: "simple"} it matches bytewise and uses no _id index;
// under a coarser collation than the collection's it matches every
// document equal under it.
func TestCollatedIDReads(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t)
	createCI(t, e, "c")
	for _, id := range []string{"foo", "bar"} {
		if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	simple := WithCollation(ctx, mustRaw(t, simpleCollation))
	byID := bson.D{{Key: "_id", Value: "FOO"}}
	if n := countIDs(ctx, t, e, "c", byID); n != 1 {
		t.Errorf("count {_id: FOO}: %d, want 1", n)
	}
	if n := countIDs(ctx, t, e, "c", bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"FOO", "BAR"}}}}}); n != 2 {
		t.Errorf("count {_id: {$in: [FOO, BAR]}}: %d, want 2", n)
	}
	if n := countIDs(simple, t, e, "c", byID); n != 0 {
		t.Errorf("count {_id: FOO} under the simple collation: %d, want 0", n)
	}
	docs, err := findAll(t, e, "c", FindSpec{Filter: mustRaw(t, byID)})
	if err != nil || len(docs) != 1 {
		t.Errorf("find {_id: FOO}: %v %v, want foo", docs, err)
	}
	vals, err := e.Distinct(ctx, "db", "c", "_id", mustRaw(t, byID))
	if err != nil || len(vals) != 1 {
		t.Errorf("distinct _id of {_id: FOO}: %v %v, want [foo]", vals, err)
	}
	ex, err := e.Explain(ctx, "db", "c", FindSpec{Filter: mustRaw(t, byID)}, true)
	if err != nil || ex.Stage != "IDHACK" || ex.NReturned != 1 {
		t.Errorf("explain {_id: FOO}: %+v %v, want IDHACK returning 1", ex, err)
	}
	ex, err = e.Explain(simple, "db", "c", FindSpec{Filter: mustRaw(t, byID)}, true)
	if err != nil || ex.Stage != "COLLSCAN" || ex.NReturned != 0 {
		t.Errorf("explain {_id: FOO} under the simple collation: %+v %v, want COLLSCAN returning 0", ex, err)
	}
	// The collection's order of _id is its collation's: a sort on _id
	// under it needs no sort stage.
	ex, err = e.Explain(ctx, "db", "c", FindSpec{Sort: mustRaw(t, bson.D{{Key: "_id", Value: 1}})}, false)
	if err != nil || ex.Sort {
		t.Errorf("explain sort {_id: 1}: %+v %v, want no blocking sort", ex, err)
	}

	// A case-sensitive collection holds foo and FOO; a query under a
	// case-insensitive collation finds both.
	opts := mustRaw(t, bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "en_US"}, {Key: "strength", Value: 3}}}})
	if err := e.CreateCollection(ctx, "db", "cs", CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"foo", "FOO"} {
		if err := insertOne(ctx, t, e, "cs", bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	ci := WithCollation(ctx, mustRaw(t, bson.D{{Key: "locale", Value: "en_US"}, {Key: "strength", Value: 2}}))
	if n := countIDs(ci, t, e, "cs", bson.D{{Key: "_id", Value: "foo"}}); n != 2 {
		t.Errorf("count {_id: foo} under strength 2: %d, want 2", n)
	}
	id := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "foo")}
	if _, point, err := e.FindPointByID(ci, "db", "cs", id); err != nil || point {
		t.Errorf("FindPointByID foo under strength 2: point %v, %v; want false: two documents match", point, err)
	}
	if doc, point, err := e.FindPointByID(ctx, "db", "cs", id); err != nil || !point || doc == nil {
		t.Errorf("FindPointByID foo under the default: %v, point %v, %v; want the document", doc, point, err)
	}
}

// jstests/core/collation.js ("Update with idhack ...", "Remove with
// idhack ...", "Remove on _id should return correct results when
// "simple" collation specified ...", the findAndModify cases): writes by
// _id match under the collection's collation, and under {locale:
// "simple"} bytewise; an upsert whose _id equals an existing one under
// the collation updates it, or, when its query missed it under the
// simple collation, is a duplicate key (11000).
func TestCollatedIDWrites(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t)
	createCI(t, e, "c")
	if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "foo"}}); err != nil {
		t.Fatal(err)
	}
	simple := WithCollation(ctx, mustRaw(t, simpleCollation))
	set := func(n int) *update.Update {
		return mustCompileUpdate(t, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: n}}}})
	}
	byID := mustRaw(t, bson.D{{Key: "_id", Value: "FOO"}})
	res, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: byID, Update: set(1)})
	if err != nil || res.Matched != 1 {
		t.Errorf("update {_id: FOO}: %+v %v, want 1 matched", res, err)
	}
	res, err = e.Update(simple, "db", "c", UpdateSpec{Filter: byID, Update: set(2)})
	if err != nil || res.Matched != 0 {
		t.Errorf("update {_id: FOO} under the simple collation: %+v %v, want none matched", res, err)
	}
	res, err = e.Update(ctx, "db", "c", UpdateSpec{Filter: byID, Update: set(3), Upsert: true})
	if err != nil || res.Matched != 1 || res.Upserted.Type != 0 {
		t.Errorf("upsert {_id: FOO}: %+v %v, want foo updated", res, err)
	}
	_, err = e.Update(simple, "db", "c", UpdateSpec{Filter: byID, Update: set(4), Upsert: true})
	wantDupID(t, "upsert {_id: FOO} under the simple collation", err, "FOO")
	fm, err := e.FindAndModify(ctx, "db", "c", FindAndModifySpec{Filter: byID, Update: set(5), New: true})
	if err != nil || fm.Value == nil || fm.Value.Lookup("n").Int32() != 5 {
		t.Errorf("findAndModify {_id: FOO}: %+v %v, want foo with n 5", fm, err)
	}
	fm, err = e.FindAndModify(simple, "db", "c", FindAndModifySpec{Filter: byID, Remove: true})
	if err != nil || fm.Value != nil {
		t.Errorf("findAndModify remove {_id: FOO} under the simple collation: %+v %v, want nothing", fm, err)
	}
	// Replacing foo's _id by FOO changes it: _id is immutable, whatever
	// the collation makes equal.
	_, err = e.Update(ctx, "db", "c", UpdateSpec{Filter: byID, Update: mustCompileUpdate(t, bson.D{{Key: "_id", Value: "FOO"}})})
	if mongoerr.CodeOf(err) != mongoerr.ImmutableField {
		t.Errorf("replace foo by {_id: FOO}: %v, want ImmutableField", err)
	}
	if n, err := e.Delete(simple, "db", "c", byID, 1, bson.RawValue{}); err != nil || n != 0 {
		t.Errorf("delete {_id: FOO} under the simple collation: %d %v, want 0", n, err)
	}
	if n, err := e.Delete(ctx, "db", "c", byID, 1, bson.RawValue{}); err != nil || n != 1 {
		t.Errorf("delete {_id: FOO}: %d %v, want 1", n, err)
	}
}

// The _id index's uniqueness under the collection's collation holds in a
// multi-document transaction and for a retryable insert, whose retry
// answers from its record (src/mongo/db/catalog: the _id index is
// unique; jstests/core/collation.js's duplicate _id).
func TestCollatedIDTransactionAndRetry(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t)
	createCI(t, e, "c")
	tx, err := e.BeginTransaction(ctx, TransactionOptions{Session: &Txn{Session: [16]byte{1}, Number: 1}})
	if err != nil {
		t.Fatal(err)
	}
	tctx := WithTransaction(ctx, tx)
	if err := insertOne(tctx, t, e, "c", bson.D{{Key: "_id", Value: "foo"}}); err != nil {
		t.Fatal(err)
	}
	wantDupID(t, "FOO after foo in a transaction", insertOne(tctx, t, e, "c", bson.D{{Key: "_id", Value: "FOO"}}), "FOO")
	tx.Abort()

	retryable := WriteOptions{Txn: &Txn{Session: [16]byte{2}, Number: 1}, StmtIDs: []int32{0}}
	if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "Bar"}}, retryable); err != nil {
		t.Fatal(err)
	}
	if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "Bar"}}, retryable); err != nil {
		t.Fatalf("the retry of an executed insert: %v, want its recorded success", err)
	}
	other := WriteOptions{Txn: &Txn{Session: [16]byte{2}, Number: 2}, StmtIDs: []int32{0}}
	wantDupID(t, "BAR after Bar, retryable", insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: "BAR"}}, other), "BAR")
}

// jstests/core/index_id_options.js ("_id indexes must have the collection
// default collation"): on a collection with a default collation,
// createIndexes of {_id: 1} names the _id index, which exists already,
// with or without a name or the collection's collation; naming another
// collation (the simple one included) fails. A collection without one
// refuses an _id index with a collation.
func TestCollatedIDIndexSpec(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t)
	createCI(t, e, "c")
	idKey := bson.D{{Key: "_id", Value: 1}}
	for _, tc := range []struct {
		coll string
		spec bson.D
		ok   bool
	}{
		{"c", bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}}, true},
		{"c", bson.D{{Key: "key", Value: idKey}}, true},
		{"c", bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en_US"}, {Key: "strength", Value: 2}}}}, true},
		{"c", bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}, {Key: "collation", Value: simpleCollation}}, false},
		{"c", bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "fr_CA"}}}}, false},
		{"plain", bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}, {Key: "collation", Value: bson.D{{Key: "locale", Value: "en_US"}}}}, false},
		{"plain", bson.D{{Key: "key", Value: idKey}, {Key: "name", Value: "_id_"}, {Key: "collation", Value: simpleCollation}}, true},
	} {
		res, err := e.CreateIndexes(ctx, "db", tc.coll, []bson.Raw{mustRaw(t, tc.spec)})
		if (err == nil) != tc.ok || err == nil && res.After != 1 {
			t.Errorf("%s: createIndexes %v: %+v %v, want success %v and the _id index alone", tc.coll, tc.spec, res, err, tc.ok)
		}
	}
}

// min and max bound the hinted _id index by keys under its collation, the
// collection's, as for any index of a collation (indexCompatibleMaxMin
// and stripFieldNamesAndApplyCollation in
// src/mongo/db/query/query_planner.cpp): under {strength: 2} "B" lies
// between "b" and "c".
func TestCollatedIDMinMax(t *testing.T) {
	ctx := context.Background()
	e := openTestEngine(t)
	createCI(t, e, "c")
	for _, id := range []string{"a", "B", "c"} {
		if err := insertOne(ctx, t, e, "c", bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatal(err)
		}
	}
	hint := bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: mustRaw(t, bson.D{{Key: "_id", Value: 1}})}
	docs, err := findAll(t, e, "c", FindSpec{Hint: hint, Min: mustRaw(t, bson.D{{Key: "_id", Value: "b"}}), Max: mustRaw(t, bson.D{{Key: "_id", Value: "c"}})})
	if err != nil || len(docs) != 1 || docs[0].Lookup("_id").StringValue() != "B" {
		t.Errorf("min b max c on _id: %v %v, want B", docs, err)
	}
}
