package engine

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// The _id index of a collection with a default collation, as a random
// model: writes and reads by _id on a collection created with {locale:
// "en", strength: 2}, each under the collection's collation, the simple
// one, or {strength: 1} (which also ignores accents), against a reference
// that holds its documents in a list and compares _id values under the
// collations: an _id equal under the collection's collation to a stored
// one is a duplicate key (11000), whatever the statement's collation, as
// mongod's _id index is unique under the collection's collation
// (jstests/core/index_id_options.js: "_id indexes must have the
// collection default collation"; jstests/core/collation.js's _id cases);
// an equality on _id matches the documents equal under the statement's
// collation. The whole collection, in _id order under its collation,
// is compared after every step, across restarts, on every backend.

const collIDColl = "cid"

var collIDDefault = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}}

// collIDPool are the _id values the model draws: strings equal under
// strength 2 or 1 only, a document holding such strings, and numbers of
// two types that are one value.
var collIDPool = []any{"a", "A", "b", "B", "é", "É", "e", bson.D{{Key: "k", Value: "x"}}, bson.D{{Key: "k", Value: "X"}}, int32(1), 1.0}

// collIDCollations are the collations a statement names: none (the
// collection's), the simple one, the collection's, and one coarser.
var collIDCollations = []bson.D{nil, {{Key: "locale", Value: "simple"}}, collIDDefault, {{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(1)}}}

// collIDDoc is a document of the reference: its _id and counter.
type collIDDoc struct {
	id bsoncore.Value
	n  int32
}

// collIDRef is the reference collection.
type collIDRef struct {
	idColl *collation.Collator // the collection's, its _id index's
	docs   []collIDDoc
}

// matching are the positions of the documents whose _id equals id under
// c (nil: bytewise BSON comparison).
func (m *collIDRef) matching(id bsoncore.Value, c *collation.Collator) []int {
	var out []int
	for i, d := range m.docs {
		if c.Compare(d.id, id) == 0 {
			out = append(out, i)
		}
	}
	return out
}

// matchingFilter are the positions of the documents filter matches under
// c, as the query matcher tests a document.
func (m *collIDRef) matchingFilter(t *testing.T, filter bson.Raw, c *collation.Collator) []int {
	t.Helper()
	f, err := query.CompileWith(filter, query.Options{Collator: c})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i, d := range m.docs {
		if f.Match(modelRaw(bson.D{{Key: "_id", Value: bson.RawValue{Type: bson.Type(d.id.Type), Value: d.id.Data}}})) {
			out = append(out, i)
		}
	}
	return out
}

// insert adds a document, or reports the duplicate key of the _id index.
func (m *collIDRef) insert(id bsoncore.Value, n int32) error {
	if len(m.matching(id, m.idColl)) > 0 {
		return refErr(mongoerr.DuplicateKey)
	}
	m.docs = append(m.docs, collIDDoc{id: id, n: n})
	return nil
}

// ordered are the documents in _id order under the collection's
// collation, the order of its _id index.
func (m *collIDRef) ordered() []collIDDoc {
	out := slices.Clone(m.docs)
	slices.SortFunc(out, func(a, b collIDDoc) int { return m.idColl.Compare(a.id, b.id) })
	return out
}

// TestModelCollatedID runs random sequences of _id writes and reads on a
// collection with a case-insensitive default collation.
func TestModelCollatedID(t *testing.T) {
	for _, backend := range modelBackends() {
		t.Run(backend, func(t *testing.T) {
			cfg := modelSettings(t, 1200)
			seed := cfg.seed
			if seed == 0 {
				seed = time.Now().UnixNano()
			}
			steps := min(cfg.steps, 1200)
			for done := 0; done < steps; done += stepsPerSeed {
				runCollatedIDSeed(t, backend, seed, stepsPerSeed)
				if cfg.seed != 0 {
					break
				}
				seed++
			}
		})
	}
}

func runCollatedIDSeed(t *testing.T, backend string, seed int64, steps int) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	open := func() *Engine {
		e, err := openModelEngine(backend, dir, Options{Clock: clk, NoReaper: true, Oplog: true})
		if err != nil {
			t.Fatalf("seed %d: open: %v", seed, err)
		}
		return e
	}
	e := open()
	defer func() { e.Close() }()
	opts := modelRaw(bson.D{{Key: "collation", Value: collIDDefault}})
	if err := e.CreateCollection(ctx, modelDB, collIDColl, CreateOptions{Raw: opts}); err != nil {
		t.Fatal(err)
	}
	idColl, err := collation.Parse(modelRaw(collIDDefault))
	if err != nil {
		t.Fatal(err)
	}
	m := &collIDRef{idColl: idColl}
	r := rand.New(rand.NewSource(seed))
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (-model.seed=%d -run TestModelCollatedID), after:\n%s\n%s", seed, seed, strings.Join(log, "\n"), fmt.Sprintf(format, args...))
	}
	for step := 0; step < steps; step++ {
		idDoc := modelRaw(bson.D{{Key: "_id", Value: collIDPool[r.Intn(len(collIDPool))]}})
		id := bsoncore.Document(idDoc).Lookup("_id")
		named := collIDCollations[r.Intn(len(collIDCollations))]
		sctx, qc := ctx, idColl
		if named != nil {
			sctx = WithCollation(ctx, modelRaw(named))
			if qc, err = collation.Parse(modelRaw(named)); err != nil {
				t.Fatal(err)
			}
		}
		filter := idDoc
		inc := mustCompileUpdate(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}})
		var what string
		switch k := r.Intn(20); {
		case k < 6:
			n := int32(r.Intn(100))
			what = fmt.Sprintf("insert {_id: %s, n: %d}", collIDString(id), n)
			doc := modelRaw(bson.D{{Key: "_id", Value: bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}}, {Key: "n", Value: n}})
			res, err := e.Insert(ctx, modelDB, collIDColl, []bson.Raw{doc}, true)
			if err == nil && len(res.Errors) > 0 {
				err = res.Errors[0].Err
			}
			if want := m.insert(id, n); codeOf(err) != codeOf(want) {
				fail("%s: engine %v, model %v", what, err, want)
			}
		case k < 10:
			// Half of the finds are of a range of _id: its plan may return
			// the range's documents without testing the filter
			// (markExact), which must then be just those the filter
			// matches under the statement's collation.
			var want []int
			if k < 8 {
				op := []string{"$gt", "$gte", "$lt", "$lte"}[r.Intn(4)]
				filter = modelRaw(bson.D{{Key: "_id", Value: bson.D{{Key: op, Value: bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}}}}})
				what = fmt.Sprintf("find {_id: {%s: %s}} under %v", op, collIDString(id), named)
				want = m.matchingFilter(t, filter, qc)
			} else {
				what = fmt.Sprintf("find %s under %v", collIDString(id), named)
				want = m.matching(id, qc)
			}
			cur, err := e.Find(sctx, modelDB, collIDColl, FindSpec{Filter: filter})
			var docs []bson.Raw
			if err == nil {
				docs, err = cur.All(ctx)
			}
			if err != nil {
				fail("%s: %v", what, err)
			}
			if got := collIDSet(docs); !slices.Equal(got, collIDSetOf(m, want)) {
				fail("%s: engine %v, model %v", what, got, collIDSetOf(m, want))
			}
			if k < 8 {
				break
			}
			// The point read behind find's fast path answers when the
			// point is one document, and then finds it.
			doc, point, err := e.FindPointByID(sctx, modelDB, collIDColl, id)
			if err != nil {
				fail("%s: FindPointByID: %v", what, err)
			}
			if point && (len(want) > 1 || (doc == nil) != (len(want) == 0)) {
				fail("%s: FindPointByID %v, model %v", what, doc, collIDSetOf(m, want))
			}
		case k < 12:
			what = fmt.Sprintf("count %s under %v", collIDString(id), named)
			n, err := e.Count(sctx, modelDB, collIDColl, filter, 0, 0, bson.RawValue{})
			if want := len(m.matching(id, qc)); err != nil || n != int64(want) {
				fail("%s: engine %d %v, model %d", what, n, err, want)
			}
		case k < 17:
			upsert := r.Intn(2) == 0
			what = fmt.Sprintf("update %s $inc under %v, upsert %v", collIDString(id), named, upsert)
			res, err := e.Update(sctx, modelDB, collIDColl, UpdateSpec{Filter: filter, Update: inc, Multi: true, Upsert: upsert})
			hits := m.matching(id, qc)
			var want error
			wantMatched := int64(len(hits))
			for _, i := range hits {
				m.docs[i].n++
			}
			if len(hits) == 0 && upsert {
				want = m.insert(id, 1)
			}
			if codeOf(err) != codeOf(want) || err == nil && res.Matched != wantMatched {
				fail("%s: engine %+v %v, model matched %d, %v", what, res, err, wantMatched, want)
			}
		case k < 19:
			what = fmt.Sprintf("delete %s under %v", collIDString(id), named)
			n, err := e.Delete(sctx, modelDB, collIDColl, filter, 0, bson.RawValue{})
			hits := m.matching(id, qc)
			m.docs = slices.DeleteFunc(m.docs, func(d collIDDoc) bool { return qc.Compare(d.id, id) == 0 })
			if err != nil || n != int64(len(hits)) {
				fail("%s: engine %d %v, model %d", what, n, err, len(hits))
			}
		default:
			what = "restart"
			e.Close()
			e = open()
		}
		log = append(log, what)
		collIDCheck(t, e, m, fail)
	}
	if v, err := e.Validate(ctx, modelDB, collIDColl, true); err != nil || !v.Valid {
		fail("validate: %+v %v", v, err)
	}
}

// collIDCheck compares the whole collection, in _id order under the
// collection's collation (a sort that names none), with the reference.
func collIDCheck(t *testing.T, e *Engine, m *collIDRef, fail func(string, ...any)) {
	t.Helper()
	ctx := context.Background()
	cur, err := e.Find(ctx, modelDB, collIDColl, FindSpec{Sort: modelRaw(bson.D{{Key: "_id", Value: int32(1)}})})
	var docs []bson.Raw
	if err == nil {
		docs, err = cur.All(ctx)
	}
	if err != nil {
		fail("find all: %v", err)
	}
	var got, want []string
	for _, d := range docs {
		got = append(got, fmt.Sprintf("%s:%d", d.Lookup("_id"), d.Lookup("n").Int32()))
	}
	for _, d := range m.ordered() {
		want = append(want, fmt.Sprintf("%s:%d", collIDString(d.id), d.n))
	}
	if !slices.Equal(got, want) {
		fail("collection: engine %v, model %v", got, want)
	}
}

// collIDSet are the _id values of docs, as sorted strings.
func collIDSet(docs []bson.Raw) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.Lookup("_id").String())
	}
	slices.Sort(out)
	return out
}

// collIDSetOf is collIDSet of the reference's documents at positions.
func collIDSetOf(m *collIDRef, positions []int) []string {
	var out []string
	for _, i := range positions {
		out = append(out, collIDString(m.docs[i].id))
	}
	slices.Sort(out)
	return out
}

// collIDString shows an _id value as the engine's documents show theirs.
func collIDString(v bsoncore.Value) string {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}.String()
}
