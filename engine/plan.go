package engine

import (
	"bytes"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/engine/usage"
	"github.com/lethedb/lethe/mongoerr"
)

type planKind int

const (
	planCollScan planKind = iota // every document, in _id order
	planIDPoints                 // point reads by _id
	planIDRange                  // a range of _id
	planIndex                    // a secondary index scan
)

// span is a half-open range of pebble keys.
type span struct{ lo, hi []byte }

// plan is how a query reads a collection: which keys, in which order.
type plan struct {
	kind    planKind
	ix      *record.Index // planIndex
	spans   []span        // ascending, non-overlapping; for planIDPoints each is one key
	reverse bool
	// sorted is set when the scan order satisfies the query's sort.
	sorted bool
	// text is the query's $text bound to the text index it reads.
	text *text.Bound
	// textOr is set for a $text under an $or (textPlan): the spans are
	// also those of the other clauses, of document keys and of the
	// indexes orIndexes, and a document is returned once.
	textOr    bool
	orIndexes []*record.Index
	// near is the query's $near, read through ix nearest first (geo.go).
	near *query.NearSpec
	// exact says every document in the spans matches the filter, which a
	// cursor then need not test (markExact).
	exact bool
}

// stage names the plan as explain reports it.
func (p *plan) stage() string {
	if p.textOr {
		return "OR"
	}
	if p.text != nil {
		return "TEXT_MATCH"
	}
	if p.near != nil {
		return p.nearStage()
	}
	switch p.kind {
	case planIDPoints:
		return "IDHACK"
	case planCollScan:
		return "COLLSCAN"
	}
	return "IXSCAN"
}

func (p *plan) indexName() string {
	switch p.kind {
	case planIndex:
		return p.ix.Meta.Name
	case planIDPoints, planIDRange:
		return "_id_"
	}
	return ""
}

// choosePlan picks the access path for a filter and sort: an explicit hint,
// _id point reads, the secondary index with the most selective bounds, an
// _id range, an index that yields the sort order, or a collection scan.
// Bounds may be wider than the filter, which is re-applied unless the plan
// is exact (markExact).
func (st *collState) choosePlan(f *query.Filter, srt *query.Sort, hint bson.RawValue) (*plan, error) {
	var conj []query.Predicate
	var qc *collation.Collator
	if f != nil {
		conj, qc = f.Conjuncts(), f.Collator()
		if q := f.Text(); q != nil {
			return st.textPlan(f, q, conj, srt)
		}
	}
	if len(hint.Value) > 0 {
		return st.hintedPlan(conj, qc, srt, hint)
	}
	if srt != nil && srt.Natural() != 0 {
		// Storage order is _id order: a collection scan, backwards for -1.
		lo, hi := record.DocRange(st.meta.ID)
		return &plan{kind: planCollScan, spans: []span{{lo, hi}}, sorted: true, reverse: srt.Natural() < 0}, nil
	}
	if p := idPlan(st.meta.ID, usableConjuncts(conj, qc, st.idColl)); p != nil {
		st.applySort(p, srt)
		st.markExact(p, f, conj, qc)
		return p, nil
	}
	var best *plan
	bestScore := 0
	for _, ix := range st.indexes {
		// A text index holds terms, and no entry for a document without
		// any: only $text reads it (textPlan).
		if ix.Partial != nil || ix.Meta.Hidden || ix.IsText() {
			continue
		}
		spans, score := planBounds(ix, usableConjuncts(conj, qc, ix.Collator))
		if score > bestScore {
			best, bestScore = &plan{kind: planIndex, ix: ix, spans: spans}, score
		}
	}
	if best != nil {
		st.applySort(best, srt)
		return best, nil
	}
	lo, hi := record.DocRange(st.meta.ID)
	p := &plan{kind: planCollScan, spans: []span{{lo, hi}}}
	st.applySort(p, srt)
	if !p.sorted && srt != nil && len(srt.Fields()) > 0 {
		for _, ix := range st.indexes {
			if ix.Partial != nil || ix.Meta.Sparse || ix.Meta.Multikey || ix.Meta.Hidden || ix.IsText() || ix.HasGeo() {
				continue
			}
			lo, hi := record.IndexRange(ix.Meta.ID)
			q := &plan{kind: planIndex, ix: ix, spans: []span{{lo, hi}}}
			st.applySort(q, srt)
			if q.sorted {
				return q, nil
			}
		}
	}
	return p, nil
}

func (st *collState) hintedPlan(conj []query.Predicate, qc *collation.Collator, srt *query.Sort, hint bson.RawValue) (*plan, error) {
	var ix *record.Index
	isID := false
	switch hint.Type {
	case bson.TypeString:
		name := hint.StringValue()
		if name == "_id_" {
			isID = true
		}
		for _, x := range st.indexes {
			if x.Meta.Name == name && !x.Meta.Hidden {
				ix = x
			}
		}
	case bson.TypeEmbeddedDocument:
		doc := hint.Document()
		if v, err := doc.LookupErr("$natural"); err == nil {
			lo, hi := record.DocRange(st.meta.ID)
			p := &plan{kind: planCollScan, spans: []span{{lo, hi}}}
			if f, ok := v.AsFloat64OK(); ok && f < 0 {
				p.reverse = true
			}
			return p, nil
		}
		if first, err := doc.IndexErr(0); err == nil && first.Key() == "_id" && len(mustElems(doc)) == 1 {
			isID = true
		}
		for _, x := range st.indexes {
			if bytes.Equal(x.Meta.Key, doc) && !x.Meta.Hidden {
				ix = x
			}
		}
	}
	if isID {
		p := idPlan(st.meta.ID, usableConjuncts(conj, qc, st.idColl))
		if p == nil {
			lo, hi := record.DocRange(st.meta.ID)
			p = &plan{kind: planIDRange, spans: []span{{lo, hi}}}
		}
		st.applySort(p, srt)
		return p, nil
	}
	if ix == nil || ix.IsText() {
		return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index")
	}
	spans, score := planBounds(ix, usableConjuncts(conj, qc, ix.Collator))
	if score == 0 {
		lo, hi := record.IndexRange(ix.Meta.ID)
		spans = []span{{lo, hi}}
	}
	p := &plan{kind: planIndex, ix: ix, spans: spans}
	st.applySort(p, srt)
	return p, nil
}

func mustElems(d bson.Raw) []bson.RawElement {
	els, _ := d.Elements()
	return els
}

// applySort marks p sorted (possibly reversing it) when its key order is
// the requested sort order.
func (st *collState) applySort(p *plan, srt *query.Sort) {
	if srt == nil || len(srt.Fields()) == 0 {
		p.sorted = true
		return
	}
	if !st.sortsUnder(p, srt) {
		return
	}
	fields := srt.Fields()
	var keyFields []record.IndexField
	switch p.kind {
	case planCollScan, planIDRange, planIDPoints:
		keyFields = []record.IndexField{{Path: "_id"}}
	case planIndex:
		if p.ix.Meta.Multikey {
			return
		}
		keyFields = p.ix.Fields
	}
	if len(fields) > len(keyFields) {
		return
	}
	flip := fields[0].Desc != keyFields[0].Desc
	for i, f := range fields {
		// A hashed field's keys are in hash order, no order of its values.
		if f.Path != keyFields[i].Path || (f.Desc != keyFields[i].Desc) != flip || keyFields[i].Hashed {
			return
		}
	}
	p.sorted, p.reverse = true, flip
}

// markExact marks an _id range plan exact when its span admits just the
// documents f matches: f is nothing but range comparisons of _id that
// query.Filter.ExactRange vouches for, and every one of them went into the
// span (none was left out for its value or its collation). MongoDB's
// planner likewise drops the filter of bounds it builds exactly (EXACT
// tightness in src/mongo/db/query/index_bounds_builder.cpp). A scan of
// short _id ranges spent a twentieth of its CPU testing the filter again
// (YCSB E).
func (st *collState) markExact(p *plan, f *query.Filter, conj []query.Predicate, qc *collation.Collator) {
	if p.kind != planIDRange || f == nil || !f.ExactRange("_id") {
		return
	}
	for _, c := range conj {
		if !indexable(c) {
			return
		}
	}
	p.exact = len(usableConjuncts(conj, qc, st.idColl)) == len(conj)
}

// idPlan reads by _id when the filter pins it to points or a range.
func idPlan(collID uint64, conj []query.Predicate) *plan {
	for _, c := range conj {
		if c.Path != "_id" || !indexable(c) {
			continue
		}
		switch c.Op {
		case "$eq", "$in":
			keys := make([][]byte, 0, len(c.Values))
			for _, v := range c.Values {
				keys = append(keys, keycodec.Append(nil, v))
			}
			slices.SortFunc(keys, bytes.Compare)
			keys = slices.CompactFunc(keys, bytes.Equal)
			p := &plan{kind: planIDPoints}
			for _, k := range keys {
				dk := record.DocKey(nil, collID, k)
				p.spans = append(p.spans, span{dk, record.KeySuccessor(dk)})
			}
			return p
		}
	}
	lo, hi, ok := rangeBounds(conj, "_id", false)
	if !ok {
		return nil
	}
	prefix, _ := record.DocRange(collID)
	return &plan{kind: planIDRange, spans: []span{{append(append([]byte(nil), prefix...), lo...), append(append([]byte(nil), prefix...), hi...)}}}
}

// planBounds are the spans of ix for the conjuncts: a geo index's
// (geoBounds) or any other's (indexBounds).
func planBounds(ix *record.Index, conj []query.Predicate) ([]span, int) {
	if ix.HasGeo() {
		return geoBounds(ix, conj)
	}
	return indexBounds(ix, conj)
}

// indexable reports whether a predicate's values can bound an index scan:
// values whose matches are exactly the entries equal to them or within
// their type's range. Null, arrays, MinKey/MaxKey and undefined match in
// ways (missing fields, whole arrays) that entries do not mirror.
func indexable(c query.Predicate) bool {
	if len(c.Values) == 0 {
		return false
	}
	for _, v := range c.Values {
		switch v.Type {
		case bsoncore.TypeNull, bsoncore.TypeUndefined, bsoncore.TypeArray, bsoncore.TypeMinKey, bsoncore.TypeMaxKey, bsoncore.TypeRegex:
			return false
		case bsoncore.TypeDouble:
			if f := v.Double(); f != f {
				return false
			}
		}
	}
	return true
}

// rangeBounds derives [lo, hi) key bounds for path from $gt/$gte/$lt/$lte
// conjuncts, bracketed by the type class of the value as MongoDB's
// comparisons are. With single set, only one predicate is used, as needed
// on multikey indexes, where different elements may satisfy each bound.
func rangeBounds(conj []query.Predicate, path string, single bool) (lo, hi []byte, ok bool) {
	for _, c := range conj {
		if c.Path != path || !indexable(c) || len(c.Values) != 1 {
			continue
		}
		v := c.Values[0]
		class := byte(keycodec.TypeClass(v.Type))
		enc := keycodec.Append(nil, v)
		var clo, chi []byte
		switch c.Op {
		case "$gt":
			clo, chi = record.PrefixEnd(enc), []byte{class + 1}
		case "$gte":
			clo, chi = enc, []byte{class + 1}
		case "$lt":
			clo, chi = []byte{class}, enc
		case "$lte":
			clo, chi = []byte{class}, record.PrefixEnd(enc)
		default:
			continue
		}
		if !ok {
			lo, hi, ok = clo, chi, true
		} else {
			if bytes.Compare(clo, lo) > 0 {
				lo = clo
			}
			if bytes.Compare(chi, hi) < 0 {
				hi = chi
			}
		}
		if single {
			break
		}
	}
	if ok && bytes.Compare(lo, hi) > 0 {
		hi = lo
	}
	return lo, hi, ok
}

// equalityPoints are the values an equality conjunct ($eq or $in) bounds
// path to, nil if none does.
func equalityPoints(conj []query.Predicate, path string) []bsoncore.Value {
	for _, c := range conj {
		if c.Path == path && (c.Op == "$eq" || c.Op == "$in") && indexable(c) {
			return c.Values
		}
	}
	return nil
}

// extendPrefixes returns each of prefixes followed by each of points as
// field f holds them (a hashed field, their hash): the key prefixes of the
// entries the points select, in key order when both are.
func extendPrefixes(prefixes [][]byte, f record.IndexField, points []bsoncore.Value) [][]byte {
	next := make([][]byte, 0, len(prefixes)*len(points))
	for _, p := range prefixes {
		for _, v := range points {
			if f.Hashed {
				v = record.HashedValue(v) // equal values have equal hashes
			}
			next = append(next, f.AppendKey(bytes.Clone(p), v))
		}
	}
	return next
}

// bounds computes the key spans of ix implied by the conjuncts: equality
// points on a leading run of ascending fields, then a range on the next
// one. score ranks plans: equality fields count most.
//
// On a multikey index, fields whose paths start alike may have been
// expanded from the same array together, so that each key pairs values of
// one element, while the query's conditions on them may hold in different
// elements: the run of bounded fields stops at such a field. Fields with
// different first components never share an array (a document where both
// reach arrays has parallel arrays and no keys), so their bounds combine.
func indexBounds(ix *record.Index, conj []query.Predicate) ([]span, int) {
	prefixes := [][]byte{record.IndexPrefix(nil, ix.Meta.ID)}
	score := 0
	i := 0
	for ; i < len(ix.Fields) && !ix.SharesArray(i); i++ {
		f := ix.Fields[i]
		points := equalityPoints(conj, f.Path)
		if points == nil || len(prefixes)*len(points) > 1000 {
			break
		}
		prefixes = extendPrefixes(prefixes, f, points)
		score += 10
	}
	var spans []span
	if i < len(ix.Fields) && !ix.Fields[i].Desc && !ix.Fields[i].Hashed && !ix.SharesArray(i) {
		if lo, hi, ok := rangeBounds(conj, ix.Fields[i].Path, ix.Meta.Multikey); ok {
			score += 5
			for _, p := range prefixes {
				spans = append(spans, span{append(append([]byte(nil), p...), lo...), append(append([]byte(nil), p...), hi...)})
			}
		}
	}
	if score == 0 {
		return nil, 0
	}
	if spans == nil {
		for _, p := range prefixes {
			spans = append(spans, span{p, record.PrefixEnd(p)})
		}
	}
	sort.Slice(spans, func(a, b int) bool { return bytes.Compare(spans[a].lo, spans[b].lo) < 0 })
	spans = slices.CompactFunc(spans, func(a, b span) bool { return bytes.Equal(a.lo, b.lo) })
	return spans, score
}

// countUse counts an operation that reads the collection by p in u: an
// access of its index, or a collection scan.
func (p *plan) countUse(u *usage.Counters, clock clock.Clock) {
	switch p.kind {
	case planCollScan:
		u.CountCollScan()
	case planIndex:
		u.Access(p.ix.Meta.ID, clock).Ops.Add(1)
		for _, x := range p.orIndexes {
			u.Access(x.Meta.ID, clock).Ops.Add(1)
		}
	default:
		u.Access(0, clock).Ops.Add(1)
	}
}

// planFor picks the plan of a compiled query: the hinted index between the
// query's min and max keys when it has them, otherwise what choosePlan
// picks.
func (st *collState) planFor(q *compiledQuery, spec FindSpec) (*plan, error) {
	if ns := q.filter.Near(); ns != nil {
		return st.nearPlan(ns)
	}
	if len(spec.Min) <= 5 && len(spec.Max) <= 5 {
		return st.choosePlan(q.filter, q.sort, spec.Hint)
	}
	if len(spec.Hint.Value) == 0 {
		return nil, plannerError(51173, "When using min()/max() a hint of which index to use must be provided")
	}
	p, err := st.hintedPlan(nil, nil, q.sort, spec.Hint)
	if err != nil {
		return nil, err
	}
	var fields []record.IndexField
	var prefix []byte
	// keys is the collation of the index: for _id, the one its primary
	// keys are made under.
	var keys *collation.Collator
	switch p.kind {
	case planIndex:
		fields, prefix = p.ix.Fields, record.IndexPrefix(nil, p.ix.Meta.ID)
		keys = p.ix.Collator
	case planIDRange, planIDPoints:
		fields = []record.IndexField{{Path: "_id"}}
		prefix, _ = record.DocRange(st.meta.ID)
		keys = st.idColl
	default: // a $natural hint names no index
		return nil, plannerError(51173, "When using min()/max() a hint of which index to use must be provided")
	}
	lo, hi := prefix, record.PrefixEnd(prefix)
	for _, b := range []struct {
		doc   bson.Raw
		bound *[]byte
	}{{spec.Min, &lo}, {spec.Max, &hi}} {
		if len(b.doc) <= 5 {
			continue
		}
		key, ok := boundKey(b.doc, fields, q.filter.Collator(), keys)
		if !ok {
			return nil, plannerError(51174, "The index chosen is not compatible with min/max")
		}
		*b.bound = append(append([]byte(nil), prefix...), key...)
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil, plannerError(51175, "The value provided for min() does not come before the value provided for max() in the hinted index")
	}
	p.spans = []span{{lo, hi}}
	return p, nil
}

// boundKey encodes a min or max document as a key of the index with these
// fields, whose collation is keys; ok is false unless its field names are
// the key pattern's, in order. As mongod's planner does
// (indexCompatibleMaxMin and stripFieldNamesAndApplyCollation in
// src/mongo/db/query/query_planner.cpp), a bound value that is a string,
// document or array fits only an index of the query's collation qc, and
// its strings become that collation's keys, as the index's entries hold
// them.
func boundKey(doc bson.Raw, fields []record.IndexField, qc, keys *collation.Collator) (key []byte, ok bool) {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil || len(elems) != len(fields) {
		return nil, false
	}
	same := collation.Equal(qc, keys)
	for i, el := range elems {
		if el.Key() != fields[i].Path {
			return nil, false
		}
		v := el.Value()
		switch v.Type {
		case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if !same {
				return nil, false
			}
		}
		key = fields[i].AppendKey(key, keys.Key(v))
	}
	return key, true
}

// plannerError is an error of the query planner, worded as MongoDB wraps
// them.
func plannerError(code mongoerr.Code, msg string) error {
	return mongoerr.New(code, "error processing query: planner returned error :: caused by :: %s", msg)
}
