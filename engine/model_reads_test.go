package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// The read steps of the model test: count, distinct, find (whole, in a
// window, or in two batches across a clock move).

// hintError is the model's answer to a hint: an index that does not exist
// is an error, on an existing collection.
func (r *modelRun) hintError(h bson.RawValue) error {
	if h.Type != bson.TypeString || !r.m.exists || h.StringValue() == "_id_" {
		return nil
	}
	for _, ix := range r.m.indexes {
		if ix.name == h.StringValue() && !ix.hidden {
			return nil
		}
	}
	return refErr(mongoerr.BadValue)
}

// refCollator is the collator of the collation a read names (nil for none
// or the simple one), as the reference compares under it.
func refCollator(doc bson.Raw) (*collation.Collator, error) {
	if doc == nil {
		return nil, nil
	}
	return collation.Parse(doc)
}

// bindText binds a $text in f to the model's text index, as a text index
// of {t: "text"} with its defaults is spelled in the catalog; without one
// (or a hidden one) a $text query on a collection fails as MongoDB's does.
func (m *refModel) bindText(f *query.Filter) error {
	q := f.Text()
	if q == nil || !m.exists {
		return nil // a missing collection has nothing to search
	}
	var ix *refIndex
	for _, x := range m.indexes {
		if x.text && !x.hidden {
			ix = x
		}
	}
	if ix == nil {
		return refErr(mongoerr.IndexNotFound)
	}
	spec, err := text.NewSpec(modelRaw(bson.D{{Key: "_fts", Value: "text"}, {Key: "_ftsx", Value: int32(1)}}),
		modelRaw(bson.D{{Key: "weights", Value: bson.D{{Key: "t", Value: int32(1)}}}, {Key: "default_language", Value: "english"}, {Key: "language_override", Value: "language"}}))
	if err != nil {
		return err
	}
	bound, err := q.Bind(spec)
	if err != nil {
		return err
	}
	f.BindText(bound.Match)
	return nil
}

func (r *modelRun) stepRead(ctx context.Context, op *modelOp) error {
	now := r.now()
	switch op.Kind {
	case "count":
		if nearOperator(op.Filter) != "" {
			return r.stepNearCount(ctx, op) // model_near_test.go
		}
		var n int64
		var err error
		cctx := WithCollation(ctx, op.Collation)
		if herr := r.guard("count", func() { n, err = r.e.Count(cctx, modelDB, modelColl, op.Filter, op.Skip, op.Limit, op.Hint) }); herr != nil {
			return herr
		}
		coll, werr := refCollator(op.Collation)
		var f *query.Filter
		if werr == nil {
			f, werr = query.CompileWith(op.Filter, query.Options{Collator: coll})
		}
		if werr == nil {
			werr = r.m.bindText(f)
		}
		if werr == nil {
			werr = r.hintError(op.Hint)
		}
		if codeOf(err) != codeOf(werr) {
			return fmt.Errorf("count: engine error %v, model code %d", err, codeOf(werr))
		}
		if werr != nil {
			return nil
		}
		want := int64(len(r.m.matching(f, now))) - op.Skip
		if op.Limit > 0 && want > op.Limit {
			want = op.Limit
		}
		want = max(want, 0)
		if n != want {
			return fmt.Errorf("count: engine %d, model %d", n, want)
		}
	case "distinct":
		var vals []bsoncore.Value
		var err error
		if herr := r.guard("distinct", func() { vals, err = r.e.Distinct(ctx, modelDB, modelColl, op.Key, op.Filter) }); herr != nil {
			return herr
		}
		f, werr := query.Compile(op.Filter)
		if codeOf(err) != codeOf(werr) {
			return fmt.Errorf("distinct: engine error %v, model code %d", err, codeOf(werr))
		}
		if werr != nil {
			return nil
		}
		want := r.m.distinct(f, op.Key, now)
		same := len(vals) == len(want)
		for i := 0; same && i < len(vals); i++ {
			same = valuesEqual(vals[i], want[i])
		}
		if !same {
			return fmt.Errorf("distinct: engine %v, model %v", vals, want)
		}
	case "find":
		return r.stepFind(ctx, op)
	case "aggregate":
		return r.stepAggregate(ctx, op)
	}
	return nil
}

func (r *modelRun) stepFind(ctx context.Context, op *modelOp) error {
	if nearOperator(op.Filter) != "" {
		return r.stepNearFind(ctx, op) // model_near_test.go
	}
	now := r.now()
	if op.Sort != nil && (op.Skip > 0 || op.Limit > 0) || op.ReturnKey {
		// Ties would make the window depend on the plan; a key returned
		// names no document, so the order must say which one it is for.
		if op.Sort == nil {
			op.Sort = modelRaw(bson.D{{Key: "_id", Value: 1}})
		} else if _, err := op.Sort.LookupErr("_id"); err != nil {
			op.Sort = append(bytes.Clone(op.Sort[:len(op.Sort)-1]), bsoncore.AppendInt32Element(nil, "_id", 1)...)
			op.Sort = bson.Raw(fixLength(append(op.Sort, 0)))
		}
	}
	r.retargetKeyRange(op)
	lf, err := r.letForms(op)
	if err != nil {
		return err
	}
	spec := FindSpec{Filter: lf.engFilter, Sort: op.Sort, Projection: op.Proj, Skip: op.Skip, Limit: op.Limit, Hint: op.Hint, Min: op.Min, Max: op.Max, ReturnKey: op.ReturnKey}
	var docs []bson.Raw
	cctx := WithCollation(ctx, op.Collation)
	if herr := r.guard("find", func() {
		var cur *Cursor
		if cur, err = r.e.Find(cctx, modelDB, modelColl, spec); err == nil {
			docs, err = cur.All(ctx)
		}
	}); herr != nil {
		return herr
	}
	spec.Filter = lf.refFilter
	coll, werr := refCollator(op.Collation)
	var q *compiledQuery
	if werr == nil {
		q, werr = compileQueryAt(spec, time.Time{}, coll)
	}
	if werr == nil && q.filter.Text() != nil && !r.m.exists {
		// mongod parses $text against the collection's text index, and
		// a find finds no collection: "text index required for $text
		// query (no such collection ...)" (testdata/text/cases.json).
		werr = refErr(mongoerr.IndexNotFound)
	}
	if werr == nil {
		werr = r.m.bindText(q.filter)
	}
	var kr *refKeyRange
	if werr == nil && r.m.exists {
		kr, werr = r.keyRange(op)
	}
	if werr == nil && kr == nil {
		werr = r.hintError(op.Hint)
	}
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("find: engine error %v, model code %d", err, codeOf(werr))
	}
	if op.Min != nil || op.Max != nil {
		// How many key ranges are refused, and how many find something.
		switch {
		case werr != nil:
			r.counts[fmt.Sprintf("outcome.minmax.refused.%d", codeOf(werr))]++
		case len(docs) > 0:
			r.counts["outcome.minmax.found"]++
		}
	}
	if werr != nil {
		return nil
	}
	matches := r.m.matching(q.filter, now)
	if kr != nil {
		matches = slices.DeleteFunc(matches, func(d *refDoc) bool { return len(kr.inRange(d.doc)) == 0 })
	}
	if q.sort != nil {
		slices.SortStableFunc(matches, func(a, b *refDoc) int { return q.sort.Compare(a.doc, b.doc) })
	}
	shape := func(d *refDoc) bson.Raw {
		if q.proj == nil {
			return d.doc
		}
		_, pos, _ := q.filter.MatchPositional(d.doc)
		out, err := q.proj.Apply(d.doc, pos)
		if err != nil {
			return nil
		}
		return out
	}
	window := matches
	if op.Skip > 0 {
		window = window[min(int(op.Skip), len(window)):]
	}
	if op.Limit > 0 && len(window) > int(op.Limit) {
		window = window[:op.Limit]
	}
	if op.ReturnKey {
		// The order is unique: each result is one of its document's keys.
		if len(docs) != len(window) {
			return fmt.Errorf("find returnKey: engine returned %s for %d documents", rawList(docs), len(window))
		}
		for i, d := range window {
			keys := r.returnKeys(op, kr, d.doc)
			if !slices.ContainsFunc(keys, func(k bson.Raw) bool { return bytes.Equal(k, docs[i]) }) {
				return fmt.Errorf("find returnKey: engine returned %s for %s, model allows %s", docs[i], d.doc, rawList(keys))
			}
		}
		return nil
	}
	var want []bson.Raw
	for _, d := range window {
		want = append(want, shape(d))
	}
	_, hasID := op.Sort.LookupErr("_id")
	switch {
	case q.sort != nil && hasID == nil:
		// A unique order: exact sequence.
		if !slices.EqualFunc(docs, want, func(a, b bson.Raw) bool { return bytes.Equal(a, b) }) {
			return fmt.Errorf("find: engine returned %s, model %s", rawList(docs), rawList(want))
		}
	case op.Skip > 0 || op.Limit > 0:
		// No sort: any window of the right size from the matches.
		var all []bson.Raw
		for _, d := range matches {
			all = append(all, shape(d))
		}
		if len(docs) != len(want) || !subMultiset(docs, all) {
			return fmt.Errorf("find: engine returned %s, not %d of %s", rawList(docs), len(want), rawList(all))
		}
	default:
		if !subMultiset(docs, want) || len(docs) != len(want) {
			return fmt.Errorf("find: engine returned %s, model %s (any order)", rawList(docs), rawList(want))
		}
		if q.sort != nil && q.proj == nil {
			for i := range docs {
				if q.sort.Compare(docs[i], want[i]) != 0 {
					return fmt.Errorf("find: engine order %s, model %s", rawList(docs), rawList(want))
				}
			}
		}
	}
	return nil
}

func rawList(docs []bson.Raw) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// subMultiset reports whether every document of a is in b, counting repeats.
func subMultiset(a, b []bson.Raw) bool {
	left := map[string]int{}
	for _, d := range b {
		left[string(d)]++
	}
	for _, d := range a {
		if left[string(d)] == 0 {
			return false
		}
		left[string(d)]--
	}
	return true
}

// stepFindBatches reads a cursor's first two documents, moves the clock,
// and reads the rest: the rest is what matched at the start, less what was
// returned, less what expired in between.
func (r *modelRun) stepFindBatches(ctx context.Context, op *modelOp) error {
	t0 := r.now()
	spec := FindSpec{Filter: op.Filter, Sort: op.Sort}
	var first, rest []bson.Raw
	var err error
	if herr := r.guard("find in batches", func() {
		var cur *Cursor
		if cur, err = r.e.Find(ctx, modelDB, modelColl, spec); err != nil {
			return
		}
		if first, err = cur.NextBatch(ctx, 2, 1<<30); err != nil {
			return
		}
		r.clock.Advance(op.Dur)
		rest, err = cur.All(ctx)
	}); herr != nil {
		return herr
	}
	q, werr := compileQuery(spec)
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("find in batches: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		return nil
	}
	if err != nil {
		return nil
	}
	t1 := r.now()
	matches := r.m.matching(q.filter, t0)
	if q.sort != nil {
		slices.SortStableFunc(matches, func(a, b *refDoc) int { return q.sort.Compare(a.doc, b.doc) })
	}
	var all []bson.Raw
	for _, d := range matches {
		all = append(all, d.doc)
	}
	if len(first) != min(2, len(matches)) || !subMultiset(first, all) {
		return fmt.Errorf("find in batches: first batch %s, not 2 of %s", rawList(first), rawList(all))
	}
	var want []bson.Raw
	for _, d := range matches {
		if !slices.ContainsFunc(first, func(f bson.Raw) bool { return bytes.Equal(f, d.doc) }) && r.m.live(d, t1) {
			want = append(want, d.doc)
		}
	}
	_, hasID := op.Sort.LookupErr("_id")
	if q.sort != nil && hasID == nil {
		if !slices.EqualFunc(first, all[:len(first)], func(a, b bson.Raw) bool { return bytes.Equal(a, b) }) ||
			!slices.EqualFunc(rest, want, func(a, b bson.Raw) bool { return bytes.Equal(a, b) }) {
			return fmt.Errorf("find in batches: engine %s + %s, model %s + %s", rawList(first), rawList(rest), rawList(all[:len(first)]), rawList(want))
		}
		return nil
	}
	if len(rest) != len(want) || !subMultiset(rest, want) {
		return fmt.Errorf("find in batches: after %s the engine returned %s, model %s (any order)", rawList(first), rawList(rest), rawList(want))
	}
	return nil
}
