package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/retry"
	"github.com/lethedb/lethe/engine/update"
)

// FindAndModifySpec is a findAndModify command.
type FindAndModifySpec struct {
	Filter, Sort, Fields bson.Raw
	Remove               bool
	Update               *update.Update
	New                  bool
	Upsert               bool
	Hint                 bson.RawValue
	// BypassDocumentValidation skips the collection's validator.
	BypassDocumentValidation bool
	// Txn, when set, makes the command a retryable write.
	Txn *Txn
}

// FindAndModifyResult reports a findAndModify.
type FindAndModifyResult struct {
	Value           bson.Raw // nil when nothing matched (and no upsert with new)
	N               int64
	UpdatedExisting bool
	Upserted        bson.RawValue
}

// RecordedFindAndModify decodes the recorded result of a findAndModify.
func RecordedFindAndModify(raw bson.Raw) FindAndModifyResult {
	var r FindAndModifyResult
	r.N, r.UpdatedExisting, r.Upserted, r.Value = retry.DecodeFindAndModify(raw)
	return r
}

// FindAndModify updates or removes the first matching document (by sort)
// and returns it as it was before, or after with New.
// A retryable write that already ran returns its recorded result and
// changes nothing.
func (e *Engine) FindAndModify(ctx context.Context, db, coll string, spec FindAndModifySpec) (FindAndModifyResult, error) {
	if rec, ok, err := e.executedStmt(ctx, spec.Txn); err != nil || ok {
		return RecordedFindAndModify(rec), err
	}
	now := e.commandTime(spec.Update)
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return FindAndModifyResult{}, err
	}
	q, err := compileQueryAt(FindSpec{Filter: spec.Filter, Sort: spec.Sort, Projection: spec.Fields}, now, collator)
	if err != nil {
		return FindAndModifyResult{}, e.textIndexFirst(ctx, db, coll, err)
	}
	upsert := spec.Upsert && !spec.Remove
	c, err := e.writeLock(ctx, db, coll, upsert)
	if c == nil || err != nil {
		return FindAndModifyResult{}, err
	}
	defer c.ddl.RUnlock()
	for attempt := 1; ; attempt++ {
		res, err := e.findAndModifyOnce(ctx, c, q, spec)
		if res.N == 0 && upsert && retryUpsert(ctx, err, spec.Filter, attempt) || retryConflict(ctx, err, attempt) {
			continue
		}
		return res, err
	}
}

func (e *Engine) findAndModifyOnce(ctx context.Context, c *Collection, q *compiledQuery, spec FindAndModifySpec) (FindAndModifyResult, error) {
	var res FindAndModifyResult
	shape := func(doc bson.Raw) (bson.Raw, error) {
		if q.proj == nil || doc == nil {
			return doc, nil
		}
		return q.proj.Apply(doc, -1)
	}
	pks, err := e.candidates(ctx, c, q.filter, q.sort, spec.Hint, 0)
	if err != nil {
		return res, err
	}
	w := e.newWriter(ctx, c)
	defer w.close()
	w.bypassValidation = spec.BypassDocumentValidation
	w.now = e.commandTime(spec.Update)
	w.replacement = spec.Update != nil && spec.Update.IsReplacement()
	w.txn = spec.Txn
	for _, pk := range pks {
		var before bson.Raw
		var after bson.Raw
		var change func(d *storedDoc, pos int) (bson.Raw, bool, error)
		if !spec.Remove {
			change = func(d *storedDoc, pos int) (bson.Raw, bool, error) {
				out, changed, err := spec.Update.ApplyContext(ctx, d.doc, pos)
				after = out
				return out, changed, err
			}
		}
		matched, _, err := w.modify(pk, q.filter, change, &before)
		if err != nil {
			return res, err
		}
		if !matched {
			continue
		}
		res.N = 1
		res.UpdatedExisting = !spec.Remove
		doc := before
		if spec.New && !spec.Remove {
			doc = after
		}
		if res.Value, err = shape(doc); err != nil {
			return res, err
		}
		return res, w.commitResult(res)
	}
	if !spec.Upsert || spec.Remove {
		return res, w.commitResult(res)
	}
	d, err := w.upsert(spec.Update, spec.Filter)
	if err != nil {
		return res, err
	}
	res.N = 1
	res.Upserted = bsonValue(record.IDOf(d.doc))
	if spec.New {
		if res.Value, err = shape(d.doc); err != nil {
			return res, err
		}
	}
	return res, w.commitResult(res)
}

// commitResult commits the findAndModify's write, with its result when it
// is a retryable write.
func (w *writer) commitResult(res FindAndModifyResult) error {
	if w.txn != nil {
		if err := w.record(w.txn.StmtID, retry.EncodeFindAndModify(res.N, res.UpdatedExisting, res.Upserted, res.Value)); err != nil {
			return err
		}
	}
	return w.flush()
}

func bsonDoc(key string, v bson.RawValue) bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: key, Value: v}})
	return raw
}
