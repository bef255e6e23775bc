package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/query"
)

// find's min and max (a key range of the hinted index), returnKey, and
// aggregate in the model test. The model answers min and max by brute
// force: a document is in the range when one of its key tuples of the
// hinted index lies between min (inclusive) and max (exclusive), tuples
// compared field by field with keycodec.Compare, reversed for descending
// fields.

// minMaxIndexes are the complete indexes of the pool that min and max may
// name, with their key fields.
var minMaxIndexes = []struct {
	name   string
	fields []string
	desc   []bool
}{
	{"_id_", []string{"_id"}, []bool{false}}, {"a_1", []string{"a"}, []bool{false}}, {"a_1_v_-1", []string{"a", "v"}, []bool{false, true}},
	{"arr_1", []string{"arr"}, []bool{false}}, {"arr.0_1", []string{"arr.0"}, []bool{false}}, {"s.x_1", []string{"s.x"}, []bool{false}},
	{"u_1", []string{"u"}, []bool{false}}, {"u_1_arr_1", []string{"u", "arr"}, []bool{false, false}}, {"d_1", []string{"d"}, []bool{false}},
	{"s.0.x_1", []string{"s.0.x"}, []bool{false}},
}

func (g *modelGen) boundValue() any {
	switch g.r.Intn(12) {
	case 0:
		return bson.MinKey{}
	case 1:
		return bson.MaxKey{}
	case 2:
		return nil
	case 3:
		return "x"
	case 4:
		return g.date()
	}
	return g.num(g.r.Intn(5))
}

// minMax gives a find a hinted index and a key range of it, in order most
// of the time; rarely the range names other fields, or there is no index
// hint. The _id index, which every collection has, comes up most.
func (g *modelGen) minMax(op *modelOp) {
	ix := minMaxIndexes[g.r.Intn(len(minMaxIndexes))]
	value := g.boundValue
	if g.r.Intn(5) < 2 {
		ix, value = minMaxIndexes[0], g.id
	}
	op.Hint = rawValue(ix.name)
	if g.r.Intn(2) == 0 {
		op.Filter = modelRaw(bson.D{}) // the range alone decides
	}
	switch g.r.Intn(15) {
	case 0:
		op.Hint = bson.RawValue{}
	case 1:
		op.Hint = rawValue(bson.D{{Key: "$natural", Value: 1}})
	}
	bound := func() bson.Raw {
		d := bson.D{}
		for _, f := range ix.fields {
			d = append(d, bson.E{Key: f, Value: value()})
		}
		return modelRaw(d)
	}
	switch g.r.Intn(3) {
	case 0:
		op.Min = bound()
	case 1:
		op.Max = bound()
	default:
		op.Min, op.Max = bound(), bound()
		lo, _ := boundTuple(op.Min, ix.fields)
		hi, _ := boundTuple(op.Max, ix.fields)
		if compareTuples(lo, hi, ix.desc) > 0 && g.r.Intn(6) != 0 {
			op.Min, op.Max = op.Max, op.Min
		}
	}
	if g.r.Intn(12) == 0 {
		// A range of other fields than the index's.
		b := &op.Min
		if *b == nil {
			b = &op.Max
		}
		elems, _ := (*b).Elements()
		d := bson.D{{Key: "zz", Value: elems[0].Value()}}
		*b = modelRaw(d)
	}
}

// retargetKeyRange points most key ranges whose hinted index the
// collection lacks at one of the pool's indexes it has (the first in pool
// order, _id last), keeping the bounds' values, so that ranges find documents more
// often than they name no index. Recorded in the op, so logs replay.
func (r *modelRun) retargetKeyRange(op *modelOp) {
	name, ok := op.Hint.StringValueOK()
	if !ok || op.Min == nil && op.Max == nil || !r.m.exists || len(op.Filter)%3 == 0 {
		return
	}
	has := func(name string) bool {
		return name == "_id_" || slices.ContainsFunc(r.m.indexes, func(ix *refIndex) bool { return ix.name == name && !ix.hidden })
	}
	if has(name) {
		return
	}
	// The _id index, last, is always there.
	for _, ix := range append(slices.Clone(minMaxIndexes[1:]), minMaxIndexes[0]) {
		if !has(ix.name) {
			continue
		}
		op.Hint = rawValue(ix.name)
		for _, b := range []*bson.Raw{&op.Min, &op.Max} {
			if *b == nil {
				continue
			}
			elems, _ := (*b).Elements()
			d := bson.D{}
			for i, f := range ix.fields {
				d = append(d, bson.E{Key: f, Value: elems[min(i, len(elems)-1)].Value()})
			}
			*b = modelRaw(d)
		}
		return
	}
}

// refKeyPattern is the key fields of the index a hint names, and which of
// them descend; ok is false for a hint that names no index.
func (r *modelRun) refKeyPattern(h bson.RawValue) (ix *refIndex, fields []string, desc []bool, ok bool) {
	name, isName := h.StringValueOK()
	if !isName {
		return nil, nil, nil, false
	}
	if name == "_id_" {
		return nil, []string{"_id"}, []bool{false}, true
	}
	for _, ix := range r.m.indexes {
		if ix.name != name {
			continue
		}
		elems, _ := ix.key.Elements()
		for _, el := range elems {
			fields = append(fields, el.Key())
			n, _ := el.Value().AsFloat64OK()
			desc = append(desc, n < 0)
		}
		return ix, fields, desc, true
	}
	return nil, nil, nil, false
}

// refTuples is doc's key tuples in the index a hint names (ix nil: _id).
func refTuples(ix *refIndex, doc bson.Raw) [][]bsoncore.Value {
	if ix == nil {
		return [][]bsoncore.Value{{bsoncore.Document(doc).Lookup("_id")}}
	}
	return ix.keys(doc)
}

// compareTuples orders key tuples as the index does.
func compareTuples(a, b []bsoncore.Value, desc []bool) int {
	for i := range a {
		c := keycodec.Compare(a[i], b[i])
		if desc[i] {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// boundTuple reads a min or max document as a key tuple; ok is false
// unless it names the key fields, in order.
func boundTuple(doc bson.Raw, fields []string) ([]bsoncore.Value, bool) {
	elems, _ := bsoncore.Document(doc).Elements()
	if len(elems) != len(fields) {
		return nil, false
	}
	var t []bsoncore.Value
	for i, el := range elems {
		if el.Key() != fields[i] {
			return nil, false
		}
		t = append(t, el.Value())
	}
	return t, true
}

// refKeyRange is the model's key range of a find with min or max: a test
// of a key tuple, or the error the find gets.
type refKeyRange struct {
	ix     *refIndex
	fields []string
	desc   []bool
	lo, hi []bsoncore.Value // nil: unbounded
}

func (r *modelRun) keyRange(op *modelOp) (*refKeyRange, error) {
	if op.Min == nil && op.Max == nil {
		return nil, nil
	}
	const noIndex = 51173
	if op.Hint.Type == 0 {
		return nil, refErr(noIndex)
	}
	if err := r.hintError(op.Hint); err != nil {
		return nil, err
	}
	ix, fields, desc, ok := r.refKeyPattern(op.Hint)
	if !ok {
		return nil, refErr(noIndex)
	}
	kr := &refKeyRange{ix: ix, fields: fields, desc: desc}
	for _, b := range []struct {
		doc bson.Raw
		t   *[]bsoncore.Value
	}{{op.Min, &kr.lo}, {op.Max, &kr.hi}} {
		if b.doc == nil {
			continue
		}
		t, ok := boundTuple(b.doc, fields)
		if !ok {
			return nil, refErr(51174)
		}
		*b.t = t
	}
	if kr.lo != nil && kr.hi != nil && compareTuples(kr.lo, kr.hi, desc) >= 0 {
		return nil, refErr(51175)
	}
	return kr, nil
}

func (kr *refKeyRange) holds(t []bsoncore.Value) bool {
	return (kr.lo == nil || compareTuples(t, kr.lo, kr.desc) >= 0) && (kr.hi == nil || compareTuples(t, kr.hi, kr.desc) < 0)
}

// inRange is doc's key tuples within the range.
func (kr *refKeyRange) inRange(doc bson.Raw) [][]bsoncore.Value {
	var out [][]bsoncore.Value
	for _, t := range refTuples(kr.ix, doc) {
		if kr.holds(t) {
			out = append(out, t)
		}
	}
	return out
}

// returnKeys is what a returnKey find may return for doc: the key of the
// hinted index by which the scan reached it, which is any of its tuples
// (within min and max), or an empty document when the hint is $natural.
func (r *modelRun) returnKeys(op *modelOp, kr *refKeyRange, doc bson.Raw) []bson.Raw {
	ix, fields, _, ok := r.refKeyPattern(op.Hint)
	if !ok {
		return []bson.Raw{bson.Raw(bsoncore.NewDocumentBuilder().Build())}
	}
	tuples := refTuples(ix, doc)
	if kr != nil {
		tuples = kr.inRange(doc)
	}
	var out []bson.Raw
	for _, t := range tuples {
		b := bsoncore.NewDocumentBuilder()
		for i, f := range fields {
			b.AppendValue(f, t[i])
		}
		out = append(out, bson.Raw(b.Build()))
	}
	return out
}

// aggregate: a $match, maybe a $sort, maybe a $count or a join.
func (g *modelGen) aggregate(op *modelOp) {
	if !g.noDrop && g.r.Intn(4) == 0 {
		g.out(op) // replaces the collection, as a drop does
		return
	}
	if g.r.Intn(2) == 0 {
		g.geoNearAggregate(op) // model_near_test.go
		return
	}
	op.Kind = "aggregate"
	op.Filter = g.filter()
	if g.r.Intn(2) == 0 {
		op.Sort = g.sort()
	}
	switch g.r.Intn(8) {
	case 0, 1:
		op.Stages = []bson.Raw{modelRaw(bson.D{{Key: "$count", Value: "n"}})}
	case 2, 3:
		op.Stages = g.joinStages()
	}
	if joinOf(op.Stages) == "" {
		// A join's equality would compare under it too.
		g.maybeCollation(op)
	}
	g.maybeLet(op)
}

func aggregateStages(op *modelOp, filter bson.Raw) []bson.Raw {
	if op.GeoNear != nil {
		return append([]bson.Raw{geoNearStage(op, filter)}, op.Stages...)
	}
	stages := []bson.Raw{modelRaw(bson.D{{Key: "$match", Value: filter}})}
	if op.Sort != nil {
		stages = append(stages, modelRaw(bson.D{{Key: "$sort", Value: op.Sort}}))
	}
	return append(stages, op.Stages...)
}

func (r *modelRun) stepAggregate(ctx context.Context, op *modelOp) error {
	if op.GeoNear != nil {
		return r.stepGeoNear(ctx, op) // model_near_test.go
	}
	now := r.now()
	lf, err := r.letForms(op)
	if err != nil {
		return err
	}
	stages := aggregateStages(op, op.Filter)
	if op.Let != nil {
		lv, err := letvars.ParseLet(op.Let, r.clock.Now())
		if err != nil {
			return fmt.Errorf("let %v: %v", op.Let, err)
		}
		if stages, err = lv.Pipeline(stages); err != nil {
			return fmt.Errorf("let %v in pipeline: %v", op.Let, err)
		}
	}
	var docs []bson.Raw
	if herr := r.guard("aggregate", func() {
		docs, err = r.e.Aggregate(WithCollation(ctx, op.Collation), modelDB, modelColl, stages, AggregateOptions{})
	}); herr != nil {
		return herr
	}
	f, werr := refFilterOf(op, lf.refFilter)
	var srt *query.Sort
	if werr == nil {
		srt, werr = refSortOf(op)
	}
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("aggregate: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		return nil
	}
	matches := r.m.matching(f, now)
	if srt != nil {
		slices.SortStableFunc(matches, func(a, b *refDoc) int { return srt.Compare(a.doc, b.doc) })
	}
	if kind := joinOf(op.Stages); kind != "" {
		want, err := r.joinWant(op.Stages, matches, now)
		if err != nil {
			return err
		}
		return checkJoin(kind, docs, want)
	}
	var want []bson.Raw
	for _, d := range matches {
		want = append(want, d.doc)
	}
	if len(op.Stages) > 0 {
		// $count: one document, none for no input.
		want = nil
		if len(matches) > 0 {
			want = []bson.Raw{modelRaw(bson.D{{Key: "n", Value: int32(len(matches))}})}
		}
	}
	_, hasID := op.Sort.LookupErr("_id")
	if srt != nil && hasID == nil || len(op.Stages) > 0 {
		if !slices.EqualFunc(docs, want, func(a, b bson.Raw) bool { return bytes.Equal(a, b) }) {
			return fmt.Errorf("aggregate: engine returned %s, model %s", rawList(docs), rawList(want))
		}
		return nil
	}
	if len(docs) != len(want) || !subMultiset(docs, want) {
		return fmt.Errorf("aggregate: engine returned %s, model %s (any order)", rawList(docs), rawList(want))
	}
	return nil
}
