package engine

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// The engine's side of $text: the plan that reads a collection's text
// index by the query's terms, binding the filter's $text and the sort's
// text score to the index, and the text score a find projects.

// textPlan plans a query with $text: the collection's text index, between
// the keys of each of the query's terms (under equal values of the fields
// before the text), as MongoDB's TEXT_OR over index scans. The filter
// matches as the bound query does and the sort orders by its score.
//
// A $text under an $or is planned as MongoDB's OR stage: the union of the
// text search and an index scan of each other clause (orSpans), each
// document once; a clause no index answers leaves no plan.
func (st *collState) textPlan(f *query.Filter, q *text.Query, conj []query.Predicate, srt *query.Sort) (*plan, error) {
	ix := st.textIndex()
	if ix == nil {
		return nil, errTextIndexRequired()
	}
	bound, err := q.Bind(ix.Text)
	if err != nil {
		return nil, err
	}
	textConj, others, rootOr, union := f.TextOr()
	var orSpans []span
	var orIndexes []*record.Index
	if union {
		for _, c := range others {
			spans, x, ok := st.clauseSpans(c, f.Collator())
			if !ok {
				return nil, query.ErrTextUnderOr(rootOr)
			}
			orSpans = append(orSpans, spans...)
			if x != nil && !slices.Contains(orIndexes, x) {
				orIndexes = append(orIndexes, x)
			}
		}
		conj = append(slices.Clip(conj), textConj...)
	}
	f.BindText(bound.Match)
	if srt != nil && srt.UsesTextScore() {
		score := bound.Scorer(union)
		srt.BindTextScore(func(doc []byte) float64 {
			s, _ := score(doc)
			return s // MongoDB sorts a document without a score as 0
		})
		bound.KeepScores()
	}
	prefixes := [][]byte{record.IndexPrefix(nil, ix.Meta.ID)}
	for i, path := range ix.Text.Before {
		points := equalityPoints(conj, path)
		if points == nil || len(prefixes)*len(points) > 1000 {
			return nil, plannerError(noQueryExecutionPlans, "failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?)")
		}
		prefixes = extendPrefixes(prefixes, ix.Fields[i], points)
	}
	termField := ix.Fields[len(ix.Text.Before)]
	var spans []span
	for _, p := range prefixes {
		for _, t := range bound.Terms() {
			v := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, text.KeyTerm(t))}
			k := termField.AppendKey(bytes.Clone(p), v)
			spans = append(spans, span{k, record.PrefixEnd(k)})
		}
	}
	p := &plan{kind: planIndex, ix: ix, text: bound}
	if union {
		p.textOr, p.orIndexes = true, orIndexes
		spans = append(spans, orSpans...)
	}
	p.spans = mergeSpans(spans)
	if !union || srt == nil || len(srt.Fields()) == 0 {
		st.applySort(p, srt)
	}
	return p, nil
}

// clauseSpans are the spans that find the documents of one clause of an
// $or beside $text, whose conjuncts are conj: _id's (document keys), or
// those of the index with the most selective bounds, x; ok is false when
// no index bounds the clause. The indexes are those choosePlan reads.
func (st *collState) clauseSpans(conj []query.Predicate, qc *collation.Collator) (spans []span, x *record.Index, ok bool) {
	if p := idPlan(st.meta.ID, usableConjuncts(conj, qc, nil)); p != nil {
		return p.spans, nil, true
	}
	best := 0
	for _, ix := range st.indexes {
		if ix.Partial != nil || ix.Meta.Hidden || ix.IsText() {
			continue
		}
		if sp, score := planBounds(ix, usableConjuncts(conj, qc, ix.Collator)); score > best {
			spans, x, best = sp, ix, score
		}
	}
	return spans, x, best > 0
}

// mergeSpans sorts spans and merges those that overlap, so that a scan
// reads each key once in key order.
func mergeSpans(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return bytes.Compare(a.lo, b.lo) })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && bytes.Compare(sp.lo, out[n-1].hi) <= 0 {
			if bytes.Compare(sp.hi, out[n-1].hi) > 0 {
				out[n-1].hi = sp.hi
			}
			continue
		}
		out = append(out, sp)
	}
	return out
}

// textIndex returns the collection's text index, or nil.
func (st *collState) textIndex() *record.Index {
	for _, x := range st.indexes {
		if x.IsText() && !x.Meta.Hidden {
			return x
		}
	}
	return nil
}

func errTextIndexRequired() error {
	return mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
}

// textIndexFirst orders the refusals of a filter as MongoDB does: its
// parser builds $text against the collection's text index, and only then
// are the rules on where $text may be applied (query.IsTextPlacement), so
// on a collection without a text index err becomes IndexNotFound.
func (e *Engine) textIndexFirst(ctx context.Context, db, coll string, err error) error {
	if !query.IsTextPlacement(err) {
		return err
	}
	c := e.collection(db, coll)
	if c == nil {
		return errTextIndexRequired()
	}
	st, serr := readState(ctx, c)
	if serr != nil {
		return serr
	}
	if st.textIndex() == nil {
		return errTextIndexRequired()
	}
	return err
}

// firstMatchTextPlacement reports whether the first stage of a pipeline
// is a $match whose $text is where a query may not have it
// (query.IsTextPlacement). Only the first $match may hold $text
// (checkTextStages), so that is the one to look at.
func firstMatchTextPlacement(stages []bson.Raw) bool {
	if len(stages) == 0 {
		return false
	}
	name, arg, err := pipeline.StageOf(stages[0])
	if err != nil || name != "$match" {
		return false
	}
	doc, ok := arg.DocumentOK()
	if !ok {
		return false
	}
	_, err = query.Compile(doc)
	return query.IsTextPlacement(err)
}

// isTextScoreMeta reports whether a projection value is {$meta:
// "textScore"}.
func isTextScoreMeta(v bson.RawValue) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	elems, err := d.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "$meta" {
		return false
	}
	s, ok := elems[0].Value().StringValueOK()
	return ok && s == "textScore"
}

// splitTextMeta takes the top-level {field: {$meta: "textScore"}} out of
// a find's projection: MongoDB adds the score to the projected document,
// whatever the rest of the projection keeps, after its fields. A dotted
// one stays, computed by the projection.
func splitTextMeta(proj bson.Raw) (rest bson.Raw, fields []string) {
	elems, err := proj.Elements()
	if err != nil {
		return proj, nil
	}
	var keep bson.D
	for _, el := range elems {
		if isTextScoreMeta(el.Value()) && !strings.Contains(el.Key(), ".") {
			fields = append(fields, el.Key())
			continue
		}
		keep = append(keep, bson.E{Key: el.Key(), Value: el.Value()})
	}
	if fields == nil {
		return proj, nil
	}
	if len(keep) == 0 {
		return nil, fields
	}
	rest, err = bson.Marshal(keep)
	if err != nil {
		return proj, nil
	}
	return rest, fields
}

// withTextScores returns doc with the fields set to score, at its end, or
// without them for a document without a score (ok false), as MongoDB sets
// them to the missing value.
func withTextScores(doc bson.Raw, fields []string, score float64, ok bool) bson.Raw {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	elems, _ := doc.Elements()
	for _, el := range elems {
		if slices.Contains(fields, el.Key()) {
			continue
		}
		dst = append(dst, el...)
	}
	for _, f := range fields {
		if ok {
			dst = bsoncore.AppendDoubleElement(dst, f, score)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bson.Raw(dst)
}

// bindText gives the cursor its plan's text score, and refuses a score
// asked of a query without $text, as MongoDB does.
func (c *Cursor) bindText(q *compiledQuery, p *plan) error {
	if p.text != nil {
		c.score = p.text.Scorer(p.textOr)
	}
	c.scoreFields = q.scoreFields
	if c.score == nil && (len(q.scoreFields) > 0 || (q.sort != nil && q.sort.UsesTextScore())) {
		return text.ErrNoScore()
	}
	return nil
}

// checkTextStages refuses $text in a $match that is not the pipeline's
// first stage (MongoDB's code 17313).
func checkTextStages(stages []bson.Raw) error {
	for i, st := range stages {
		name, arg, err := pipeline.StageOf(st)
		if err != nil || name != "$match" || i == 0 {
			continue
		}
		doc, ok := arg.DocumentOK()
		if !ok {
			continue
		}
		if f, err := query.Compile(doc); err == nil && f.Text() != nil {
			return mongoerr.New(17313, "$match with $text is only allowed as the first pipeline stage")
		}
	}
	return nil
}

// textInfo is the parsed $text of a text plan as MongoDB's explain shows
// it (parsedTextQuery); nil for other plans.
func (p *plan) textInfo() bson.D {
	if p.text == nil {
		return nil
	}
	terms, negated, phrases, negatedPhrases := p.text.Info()
	return bson.D{{Key: "terms", Value: terms}, {Key: "negatedTerms", Value: negated}, {Key: "phrases", Value: phrases}, {Key: "negatedPhrases", Value: negatedPhrases}}
}
