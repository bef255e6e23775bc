package engine

import (
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/query"
)

// $out onto its own source in the model test: an aggregation over the
// model's collection, a $match (and perhaps a $sort), ends in $out naming
// that same collection. MongoDB's $out writes the results to a temporary
// collection made like the target, with its options and indexes, and
// renames it over the target ("$out (aggregation)" in MongoDB's manual):
// the collection then holds exactly the documents that matched, each
// written anew, and keeps its indexes and validator. The aggregation
// itself succeeds with no documents: $out reads all its input before it
// writes, so replacing the source kills nothing still reading it.
//
// The model answers by brute force: the documents visible now that match
// the filter are inserted one by one into an empty copy of the collection's
// definition, validation bypassed (the op always bypasses: the validator
// may have been added after documents it refuses), and that copy's
// documents become the collection's; documents expired but not yet purged
// are gone with the old collection.

// out makes op an $out onto the model's collection.
func (g *modelGen) out(op *modelOp) {
	op.Kind = "out"
	op.Filter = g.filter()
	if g.r.Intn(2) == 0 {
		op.Sort = g.sort()
	}
	op.Bypass = true
}

func (r *modelRun) stepOut(ctx context.Context, op *modelOp) error {
	now := r.now()
	stages := append(aggregateStages(op, op.Filter), modelRaw(bson.D{{Key: "$out", Value: modelColl}}))
	var res AggregateResult
	var err error
	if herr := r.guard("out", func() {
		res, err = r.e.AggregateStream(ctx, modelDB, modelColl, stages, AggregateOptions{BypassDocumentValidation: true})
	}); herr != nil {
		return herr
	}
	f, werr := query.Compile(op.Filter)
	if werr == nil && op.Sort != nil {
		_, werr = query.CompileSort(op.Sort)
	}
	var want *refModel
	if werr == nil {
		want, werr = r.m.out(r.m.matching(f, now), now)
	}
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("$out onto its source: engine error %v, model error %v", err, werr)
	}
	if err != nil {
		return nil
	}
	if len(res.Docs) != 0 {
		return fmt.Errorf("$out onto its source returned %s, want no documents", rawList(res.Docs))
	}
	// The client reads the (empty) result through a cursor, which must
	// not be killed by the replacement $out itself made.
	if err := res.Source.Check(); err != nil {
		return fmt.Errorf("$out onto its source: its cursor is killed: %v", err)
	}
	r.m.exists, r.m.docs = want.exists, want.docs
	return nil
}

// out is the collection after an $out of matches onto it: a collection of
// the same definition holding each of matches as inserted now.
func (m *refModel) out(matches []*refDoc, now int64) (*refModel, error) {
	fresh := &refModel{indexes: slices.Clone(m.indexes), val: m.val, bypass: true, tally: m.tally}
	for _, d := range matches {
		if _, err := fresh.insert(d.doc, d.id(), now); err != nil {
			return nil, fmt.Errorf("model $out of %s: %w", d.doc, err)
		}
	}
	fresh.exists = true
	return fresh, nil
}
