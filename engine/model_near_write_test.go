package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/update"
)

// Updates and findAndModify through $near and $nearSphere in the model
// test. MongoDB plans a write's filter as it plans a find's, so a near
// query picks the documents by distance: updateOne and findAndModify the
// nearest, updateMany all within the bounds (jstests/core/geo_update.js,
// SERVER-3428, updates and upserts through $near; geo_update_dedup.js a
// multi update through one). findAndModify plans its query through the
// same getExecutorUpdate and getExecutorDelete as update and delete
// (src/mongo/db/commands/find_and_modify.cpp), and no check refuses a
// near query there. No sort: a sort would replace the order by distance. An upsert that finds nothing builds its document from the
// filter's equalities, which a $near is not.

// nearWrite makes an update or findAndModify a $near or $nearSphere on
// loc (nearFilter). Outside transactions and without let, collation or
// retries, whose paths the other writes take.
func (g *modelGen) nearWrite(op *modelOp) {
	op.Filter = g.nearFilter()
	op.Sort, op.Let, op.Collation, op.Retry = nil, nil, nil, false
}

// nearIDFilter is the rest of a near filter with its documents narrowed
// to ids; none at all when ids is empty.
func nearIDFilter(rest bson.Raw, ids []*refDoc) bson.Raw {
	in := bson.A{}
	for _, d := range ids {
		in = append(in, bson.RawValue{Type: bson.Type(d.id().Type), Value: d.id().Data})
	}
	if len(ids) == 0 {
		return modelRaw(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}})
	}
	return modelRaw(bson.D{{Key: "$and", Value: bson.A{rest, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}}}})
}

// nearChoices are the filters, for the model, of what a single write
// through a near query may pick: each document before the first that must
// be within the bounds (each at a bound, so maybe not within them) and
// those as near as it; and, when none must be, nothing.
func nearChoices(op *modelOp, rest bson.Raw, items []refNearItem) ([]*query.Filter, error) {
	var choices [][]*refDoc
	first := slices.IndexFunc(items, func(it refNearItem) bool { return !it.optional })
	for _, it := range items {
		if first >= 0 && it.dist > items[first].dist+refNearTol(items[first].dist) {
			break
		}
		choices = append(choices, []*refDoc{it.d})
	}
	if first < 0 {
		choices = append(choices, nil)
	}
	filters := make([]*query.Filter, len(choices))
	for i, ids := range choices {
		f, err := refFilterOf(op, nearIDFilter(rest, ids))
		if err != nil {
			return nil, fmt.Errorf("the model's filter: %v", err)
		}
		filters[i] = f
	}
	return filters, nil
}

// trial is a copy of the model to run one possible outcome on.
func (r *modelRun) trial(bypass bool) *refModel {
	m := r.clone()
	m.bypass = bypass
	return m
}

// sameRefDocs reports whether the engine's stored documents are the
// model's.
func sameRefDocs(got, want []*refDoc) bool {
	if len(got) != len(want) {
		return false
	}
	byID := func(a, b *refDoc) int { return keycodec.Compare(a.id(), b.id()) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	return slices.EqualFunc(got, want, func(a, b *refDoc) bool { return bytes.Equal(a.doc, b.doc) })
}

// nearWriteSetup is what both near writes need: the update compiled for
// the engine and for the model, the near clause, the rest of the filter
// compiled, and the items within the bounds. skip says the update does
// not compile, which the other writes count.
type nearWriteSetup struct {
	u, ru *update.Update
	n     refNear
	rest  bson.Raw
	f     *query.Filter
	werr  error
	skip  bool
}

func (r *modelRun) nearWriteSetup(ctx context.Context, op *modelOp) (nearWriteSetup, error) {
	var s nearWriteSetup
	if err := r.ensureGeoIndex(ctx, op, op.Filter, 3); err != nil {
		return s, err
	}
	if !op.Remove {
		var err error
		if s.u, err = compileUpdateOf(op, op.Pipe, r.clock.Now()); err != nil {
			r.counts["skipped.badUpdate"]++
			s.skip = true
			return s, nil
		}
		if s.ru, err = compileUpdateOf(op, op.Pipe, r.clock.Now()); err != nil {
			return s, err
		}
	}
	s.n, s.rest = splitNear(op.Filter)
	if _, perr := query.Compile(s.rest); op.Upsert && !op.Remove && perr == nil {
		// An upsert creates the collection before it plans the query
		// (src/mongo/db/ops/update.cpp: "The update stage does not create
		// its own collection"; find_and_modify.cpp likewise), so a near
		// upsert on a missing collection leaves it made, without the
		// index its plan needs: 291. A filter that does not parse fails
		// before and makes none, as the model's other updates expect
		// (write_ops_exec.cpp's performSingleUpdateOp runs ParsedUpdate's
		// parseRequest before its loop that makes the collection, as
		// read in the 4.x source).
		r.m.exists = true
	}
	_, s.f, s.werr = r.m.nearFilter(op.Filter)
	return s, nil
}

// stepNearUpdate runs an update with $near or $nearSphere. Without a
// 2dsphere index the write finds no plan, 291, as a find does. updateOne
// changes one of the nearest documents, or upserts when none is within
// the bounds; updateMany those within them. The model runs each possible
// choice on a copy of itself and keeps the one whose result and documents
// are the engine's.
func (r *modelRun) stepNearUpdate(ctx context.Context, op *modelOp) error {
	now := r.now()
	s, err := r.nearWriteSetup(ctx, op)
	if err != nil || s.skip {
		return err
	}
	spec := UpdateSpec{Filter: op.Filter, Update: s.u, Multi: op.Multi, Upsert: op.Upsert, BypassDocumentValidation: op.Bypass}
	var res UpdateResult
	if herr := r.guard("update near", func() { res, err = r.e.Update(ctx, modelDB, modelColl, spec) }); herr != nil {
		return herr
	}
	if done, rerr := r.nearRefused("update near", s, err); done {
		return rerr
	}
	items := r.m.nearItems(s.n, s.f, now)
	stored, serr := r.engineDocs(true)
	if serr != nil {
		return serr
	}
	genID := rawIDValue(res.Upserted)
	if op.Multi {
		return r.nearUpdateMany(op, s, items, stored, res, err, now)
	}
	choices, cerr := nearChoices(op, s.rest, items)
	if cerr != nil {
		return fmt.Errorf("update near: %v", cerr)
	}
	for _, f := range choices {
		m := r.trial(op.Bypass)
		want := m.update(f, nil, s.rest, s.ru, false, op.Upsert, genID, now)
		if codeOf(err) != codeOf(want.err) || res.Matched != want.res.Matched || res.Modified != want.res.Modified ||
			(res.Upserted.Type == 0) != (want.res.Upserted.Type == 0) || !sameRefDocs(stored, m.docs) {
			continue
		}
		r.m.docs, r.m.exists = m.docs, m.exists
		r.nearWriteOutcome(items, res.Matched)
		return nil
	}
	return fmt.Errorf("update near: engine matched %d modified %d upserted %v error %v, which no choice of the model's gives; model %s", res.Matched, res.Modified, res.Upserted, err, nearList(items))
}

// nearUpdateMany checks an updateMany through a near query: it updates
// every document that must be within the bounds and maybe those at a
// bound, the ones the engine changed; which of the latter it matched
// without changing, only its count of matches says. A document at a bound
// that the update failed on is matched and unchanged: when the engine
// reports an error, the model also tries those documents matched.
func (r *modelRun) nearUpdateMany(op *modelOp, s nearWriteSetup, items []refNearItem, stored []*refDoc, res UpdateResult, engineErr error, now int64) error {
	var sure, unsure []*refDoc
	for _, it := range items {
		changed := !slices.ContainsFunc(stored, func(g *refDoc) bool { return bytes.Equal(g.doc, it.d.doc) })
		if !it.optional || changed {
			sure = append(sure, it.d)
		} else {
			unsure = append(unsure, it.d)
		}
	}
	choices := [][]*refDoc{sure}
	if engineErr != nil && len(unsure) > 0 {
		choices = append(choices, append(slices.Clone(sure), unsure...))
	}
	pre := r.clone()
	var err error
	for i, ids := range choices {
		if i > 0 {
			// The try before changed the model: start from before it.
			r.m.docs, r.m.exists = pre.docs, pre.exists
			pre = r.clone()
		}
		// The documents at a bound left out of ids the engine may have
		// matched without changing them.
		extra := len(sure) + len(unsure) - len(ids)
		if err = r.nearUpdateManyOf(op, s, pre, items, ids, extra, stored, res, engineErr, now); err == nil {
			return nil
		}
	}
	return err
}

// nearUpdateManyOf checks an updateMany through a near query as the model's
// update of the documents ids, from pre (a copy of the model before it),
// which the engine may have matched extra more of without changing them.
func (r *modelRun) nearUpdateManyOf(op *modelOp, s nearWriteSetup, pre *refModel, items []refNearItem, ids []*refDoc, extra int, stored []*refDoc, res UpdateResult, engineErr error, now int64) error {
	f, ferr := refFilterOf(op, nearIDFilter(s.rest, ids))
	if ferr != nil {
		return fmt.Errorf("updateMany near: the model's filter: %v", ferr)
	}
	want := r.m.update(f, nil, s.rest, s.ru, true, op.Upsert, rawIDValue(res.Upserted), now)
	if want.ambiguous {
		// An error part way, or unique keys that move: the engine's
		// order decides, and each document it changed must be what the
		// update makes of it.
		r.counts["resync.multiUpdate"]++
		return r.resyncAfterMulti(pre, f, want.matches, s.ru, engineErr)
	}
	switch {
	case codeOf(engineErr) != codeOf(want.err):
		return fmt.Errorf("updateMany near: engine error %v, model code %d; model %s", engineErr, codeOf(want.err), nearList(items))
	case res.Matched < want.res.Matched || res.Matched > want.res.Matched+int64(extra) || res.Modified != want.res.Modified:
		return fmt.Errorf("updateMany near: engine matched %d modified %d, model %d (%d more at a bound) %d; model %s", res.Matched, res.Modified, want.res.Matched, extra, want.res.Modified, nearList(items))
	case (res.Upserted.Type == 0) != (want.res.Upserted.Type == 0):
		return fmt.Errorf("updateMany near: engine upserted %v, model %v", res.Upserted, want.res.Upserted)
	case !sameRefDocs(stored, r.m.docs):
		return fmt.Errorf("updateMany near: engine holds %s, model %s", refDocList(stored), refDocList(r.m.docs))
	}
	r.nearWriteOutcome(items, res.Matched)
	return nil
}

// stepNearFindAndModify runs a findAndModify with $near or $nearSphere:
// it updates or removes one of the nearest documents and returns it, or
// upserts when none is within the bounds; without a 2dsphere index, 291.
func (r *modelRun) stepNearFindAndModify(ctx context.Context, op *modelOp) error {
	now := r.now()
	s, err := r.nearWriteSetup(ctx, op)
	if err != nil || s.skip {
		return err
	}
	spec := FindAndModifySpec{Filter: op.Filter, Fields: op.Proj, Remove: op.Remove, Update: s.u, New: op.New, Upsert: op.Upsert, BypassDocumentValidation: op.Bypass}
	var res FindAndModifyResult
	if herr := r.guard("findAndModify near", func() { res, err = r.e.FindAndModify(ctx, modelDB, modelColl, spec) }); herr != nil {
		return herr
	}
	if done, rerr := r.nearRefused("findAndModify near", s, err); done {
		return rerr
	}
	q, qerr := refQueryOf(op, FindSpec{Filter: s.rest, Projection: op.Proj})
	if qerr != nil {
		return fmt.Errorf("findAndModify near: the model's projection: %v", qerr)
	}
	items := r.m.nearItems(s.n, s.f, now)
	stored, serr := r.engineDocs(true)
	if serr != nil {
		return serr
	}
	choices, cerr := nearChoices(op, s.rest, items)
	if cerr != nil {
		return fmt.Errorf("findAndModify near: %v", cerr)
	}
	refSpec := spec
	refSpec.Filter, refSpec.Update = s.rest, s.ru
	for _, f := range choices {
		m := r.trial(op.Bypass)
		want, _, _, werr := m.findAndModify(f, nil, q.proj, refSpec, rawIDValue(res.Upserted), now)
		if codeOf(err) != codeOf(werr) {
			continue
		}
		if werr == nil && (res.N != want.N || res.UpdatedExisting != want.UpdatedExisting || !bytes.Equal(res.Value, want.Value) ||
			(res.Upserted.Type == 0) != (want.Upserted.Type == 0)) {
			continue
		}
		if !sameRefDocs(stored, m.docs) {
			continue
		}
		r.m.docs, r.m.exists = m.docs, m.exists
		r.nearWriteOutcome(items, int64(res.N))
		return nil
	}
	return fmt.Errorf("findAndModify near: engine n=%d updatedExisting=%v upserted=%v value=%v error %v, which no choice of the model's gives; model %s",
		res.N, res.UpdatedExisting, res.Upserted, res.Value, err, nearList(items))
}

// nearRefused checks a near write the model expects refused (s.werr), and
// reports done when it was: then the error says whether the engine's code
// was the model's.
func (r *modelRun) nearRefused(what string, s nearWriteSetup, err error) (done bool, _ error) {
	if s.werr == nil {
		return false, nil
	}
	if codeOf(err) != codeOf(s.werr) {
		return true, fmt.Errorf("%s: engine error %v, model code %d", what, err, codeOf(s.werr))
	}
	r.counts["outcome.nearWrite.refused"]++
	return true, nil
}

// nearWriteOutcome counts a near write that found documents, and one that
// found none.
func (r *modelRun) nearWriteOutcome(items []refNearItem, matched int64) {
	if len(items) > 0 && matched > 0 {
		r.counts["outcome.nearWrite.found"]++
	} else {
		r.counts["outcome.nearWrite.none"]++
	}
}

func refDocList(docs []*refDoc) string {
	raws := make([]bson.Raw, len(docs))
	for i, d := range docs {
		raws[i] = d.doc
	}
	return rawList(raws)
}
