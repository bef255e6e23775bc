package engine

import (
	"bytes"
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/retry"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/ttlindex"
)

// UpdateSpec is one statement of an update command.
type UpdateSpec struct {
	Filter bson.Raw
	Update *update.Update
	Multi  bool
	Upsert bool
	Hint   bson.RawValue
	Sort   bson.Raw // which document a single update picks
	// BypassDocumentValidation skips the collection's validator.
	BypassDocumentValidation bool
	// Txn, when set, makes the statement a retryable write.
	Txn *Txn
}

// UpdateResult reports one update statement.
type UpdateResult struct {
	Matched  int64
	Modified int64
	Upserted bson.RawValue // the _id of an inserted document, if any
}

// RecordedUpdate decodes the recorded result of an update statement.
func RecordedUpdate(raw bson.Raw) UpdateResult {
	var r UpdateResult
	r.Matched, r.Modified, r.Upserted = retry.DecodeUpdate(raw)
	return r
}

// RecordedDelete decodes the recorded result of a delete statement.
func RecordedDelete(raw bson.Raw) int64 { return retry.DecodeDelete(raw) }

// candidates lists the primary keys of live documents that match f,
// in plan order (or sort order), from one consistent read. Writers re-read
// and re-check each one under its lock.
func (e *Engine) candidates(ctx context.Context, c *Collection, f *query.Filter, srt *query.Sort, hint bson.RawValue, limit int) ([][]byte, error) {
	st, err := readState(ctx, c)
	if err != nil {
		return nil, err
	}
	if ns := f.Near(); ns != nil {
		return e.nearCandidates(ctx, c, st, ns, f, srt, limit) // geo.go
	}
	p, err := st.choosePlan(f, srt, hint)
	if err != nil {
		return nil, err
	}
	p.countUse(&c.usage, e.clock)
	if p.kind == planIDPoints && (srt == nil || p.sorted) {
		// The writer re-reads and re-checks each document under its lock,
		// so reading them here too would only double the cost of by-_id
		// writes. No limit: a point may name a missing document.
		var pks [][]byte
		for _, sp := range p.spans {
			pks = append(pks, record.PKOfDocKey(sp.lo))
		}
		return pks, nil
	}
	sc := &scanner{e: e, coll: c, p: p, multi: transactionOf(ctx)}
	type hit struct {
		pk  []byte
		doc bson.Raw
	}
	var hits []hit
	keepDocs := srt != nil && !p.sorted
	for !sc.done {
		err := sc.next(ctx, func(d *storedDoc) (bool, error) {
			if matched, err := f.MatchErr(d.doc); err != nil || !matched {
				return err == nil, err
			}
			h := hit{pk: append([]byte(nil), d.pk...)}
			if keepDocs {
				h.doc = append(bson.Raw(nil), d.doc...)
			}
			hits = append(hits, h)
			return keepDocs || limit <= 0 || len(hits) < limit, nil
		})
		if err != nil {
			return nil, err
		}
		if limit > 0 && len(hits) >= limit && !keepDocs {
			break
		}
	}
	if keepDocs {
		slices.SortStableFunc(hits, func(a, b hit) int { return srt.Compare(a.doc, b.doc) })
	}
	pks := make([][]byte, 0, len(hits))
	for _, h := range hits {
		pks = append(pks, h.pk)
	}
	return pks, nil
}

// commandTime is the time of a command that applies u (nil for none):
// the time u was compiled for, so that $$NOW in the command's filter and
// validator agrees with u's $$NOW and $currentDate, or else the engine
// clock's.
func (e *Engine) commandTime(u *update.Update) time.Time {
	if u != nil {
		if t := u.Now(); !t.IsZero() {
			return t
		}
	}
	return e.clock.Now()
}

// Update runs one update statement.
// A retryable write's statement that already ran returns its recorded
// result and changes nothing.
func (e *Engine) Update(ctx context.Context, db, coll string, spec UpdateSpec) (UpdateResult, error) {
	if rec, ok, err := e.executedStmt(ctx, spec.Txn); err != nil || ok {
		return RecordedUpdate(rec), err
	}
	now := e.commandTime(spec.Update)
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return UpdateResult{}, err
	}
	q, err := compileQueryAt(FindSpec{Filter: spec.Filter, Sort: spec.Sort}, now, collator)
	if err != nil {
		return UpdateResult{}, e.textIndexFirst(ctx, db, coll, err)
	}
	c, err := e.writeLock(ctx, db, coll, spec.Upsert)
	if c == nil || err != nil {
		return UpdateResult{}, err
	}
	defer c.ddl.RUnlock()
	for attempt := 1; ; attempt++ {
		res, err := e.updateOnce(ctx, c, q, spec)
		if res.Matched == 0 && spec.Upsert && retryUpsert(ctx, err, spec.Filter, attempt) || retryConflict(ctx, err, attempt) {
			continue
		}
		return res, err
	}
}

func (e *Engine) updateOnce(ctx context.Context, c *Collection, q *compiledQuery, spec UpdateSpec) (UpdateResult, error) {
	var res UpdateResult
	limit := 1
	if spec.Multi {
		limit = 0
	}
	pks, err := e.candidates(ctx, c, q.filter, q.sort, spec.Hint, limit)
	if err != nil {
		return res, err
	}
	w := e.newWriter(ctx, c)
	defer w.close()
	w.bypassValidation = spec.BypassDocumentValidation
	w.now = e.commandTime(spec.Update)
	w.replacement = spec.Update.IsReplacement()
	w.txn = spec.Txn
	for _, pk := range pks {
		matched, modified, err := w.modify(pk, q.filter, func(d *storedDoc, pos int) (bson.Raw, bool, error) {
			return spec.Update.ApplyContext(ctx, d.doc, pos)
		}, nil)
		if err != nil {
			// Documents changed before this one stand, as in MongoDB.
			if ferr := w.flush(); ferr != nil {
				return res, ferr
			}
			return res, err
		}
		if matched {
			res.Matched++
			if modified {
				res.Modified++
			}
			if err := w.done(); err != nil {
				return res, err
			}
			if !spec.Multi {
				break
			}
		}
	}
	if res.Matched == 0 && spec.Upsert {
		d, err := w.upsert(spec.Update, spec.Filter)
		if err != nil {
			return res, err
		}
		res.Upserted = bsonValue(record.IDOf(d.doc))
	}
	if w.txn != nil {
		if err := w.record(w.txn.StmtID, retry.EncodeUpdate(res.Matched, res.Modified, res.Upserted)); err != nil {
			return res, err
		}
	}
	return res, w.flush()
}

// matchesNow reports whether the document at pk is live and matches f as
// the writer reads it now, without its lock.
func (w *writer) matchesNow(pk []byte, f *query.Filter) (bool, error) {
	d, err := w.load(pk)
	if err != nil || d == nil || w.st.expired(d.h, w.e.nowMillis()) {
		return false, err
	}
	ok, _, err := f.MatchPositional(d.doc)
	return ok, err
}

// lockToModify locks the document at dk for modify, unless it does not
// match f as the statement reads it (the latest state, or a transaction's
// snapshot): a document that is not written is not waited for, since in
// MongoDB a statement that writes nothing conflicts with nothing and
// waits for no one. A plain write first takes the lock if it is free,
// which waits for no one either, so that the document is read once,
// under it, rather than also before; a statement of a transaction, where
// a lock held is another's WriteConflict, locks only what matches.
func (w *writer) lockToModify(dk, pk []byte, f *query.Filter) error {
	if w.holds(dk) {
		return nil
	}
	if w.multi == nil {
		if ok, err := w.tryLock(dk); err != nil || ok {
			return err
		}
	}
	if matches, err := w.matchesNow(pk, f); err != nil || !matches {
		return err
	}
	_, err := w.lock(dk)
	return err
}

// modify re-reads the document at pk under its lock, re-checks that it is
// live and matches f, and replaces it with what change returns (or deletes
// it when change is nil). Every match rewrites the document so that its
// _ts moves to now, even when nothing changed (TTL spec rule 4). before,
// when set, receives a copy of the document as it was.
func (w *writer) modify(pk []byte, f *query.Filter, change func(d *storedDoc, pos int) (bson.Raw, bool, error), before *bson.Raw) (matched, modified bool, err error) {
	defer func() {
		if !matched && err == nil {
			w.releaseUnwritten() // the document was left alone
		}
	}()
	dk := record.DocKey(nil, w.st.meta.ID, pk)
	if err := w.lockToModify(dk, pk, f); err != nil || !w.holds(dk) {
		return false, false, err
	}
	for {
		old, err := w.load(pk)
		if err != nil || old == nil {
			return false, false, err
		}
		nowMs := w.e.nowMillis()
		if w.st.expired(old.h, nowMs) {
			return false, false, nil
		}
		ok, pos, err := f.MatchPositional(old.doc)
		if err != nil {
			return false, false, err
		}
		if !ok {
			return false, false, nil
		}
		if before != nil {
			*before = old.doc
		}
		oldEnt, err := w.entriesOf(old)
		if err != nil {
			return false, false, err
		}
		if change == nil {
			if err := w.deleteEntries(old, &oldEnt, nil); err != nil {
				return false, false, err
			}
			return true, true, w.delete(old)
		}
		newDoc, changed, err := change(old, pos)
		if err != nil {
			return false, false, err
		}
		if err := record.CheckStoredDoc(newDoc); err != nil {
			return false, false, err
		}
		// The primary key may be a collation key (pkOf), equal for
		// spellings the collation does not tell apart: the _id is
		// compared as a value.
		if !bytes.Equal(keycodec.Append(nil, record.IDOf(newDoc)), keycodec.Append(nil, record.IDOf(old.doc))) {
			return false, false, mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'")
		}
		// Like MongoDB, only a document the update modifies is validated:
		// a no-op rewrite (for _ts) leaves its content as it was.
		if changed {
			if err := w.checkValidation(newDoc, old.doc); err != nil {
				return false, false, err
			}
		}
		d := &storedDoc{pk: pk, doc: newDoc, h: record.Header{TS: nowMs, TTL: ttlindex.DocTTLOf(bsoncore.Document(newDoc))}}
		ent, err := w.entriesOf(d)
		if err != nil {
			return false, false, err
		}
		// A plain write reads who holds d's unique keys under their locks:
		// a key read before its lock may be taken by a writer that
		// commits in between, and a lock then granted at once would not
		// tell (on TiKV it checks nothing committed before it is taken).
		// A transaction reads its snapshot, where a lock fails on a key
		// changed since, so what it read before locking stands, and a
		// duplicate key is reported before any conflict.
		if w.multi == nil {
			if keys := w.unheld(w.uniqueKeys(ent, nil)); len(keys) > 0 {
				relocked, err := w.lock(keys...)
				if err != nil {
					return false, false, err
				}
				if relocked {
					continue
				}
			}
		}
		victims, extra, err := w.uniqueConflicts(d, ent, nowMs)
		if err != nil {
			return false, false, err
		}
		if w.multi != nil {
			if _, err := w.lock(w.uniqueKeys(ent, extra)...); err != nil {
				return false, false, err
			}
		} else if len(extra) > 0 {
			// The victims were read before their locks: another writer
			// may have rewritten or removed them since. Read again under
			// them.
			if _, err := w.lock(extra...); err != nil {
				return false, false, err
			}
			continue
		}
		for _, v := range victims {
			if err := w.remove(v); err != nil {
				return false, false, err
			}
		}
		return true, changed, w.put(d, ent, old, &oldEnt)
	}
}

// Delete removes documents matching filter: all of them, or the first with
// limit 1. It returns how many it removed.
// A Txn makes it a retryable write (at most one).
func (e *Engine) Delete(ctx context.Context, db, coll string, filter bson.Raw, limit int, hint bson.RawValue, txn ...*Txn) (int64, error) {
	if len(txn) > 0 {
		if rec, ok, err := e.executedStmt(ctx, txn[0]); err != nil || ok {
			return RecordedDelete(rec), err
		}
	}
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return 0, err
	}
	f, err := query.CompileWith(filter, query.Options{Now: e.clock.Now(), Collator: collator})
	if err != nil {
		return 0, e.textIndexFirst(ctx, db, coll, err)
	}
	c, err := e.writeLock(ctx, db, coll, false)
	if c == nil || err != nil {
		return 0, err
	}
	defer c.ddl.RUnlock()
	for attempt := 1; ; attempt++ {
		n, err := e.deleteOnce(ctx, c, f, limit, hint, txn...)
		if retryConflict(ctx, err, attempt) {
			continue
		}
		return n, err
	}
}

func (e *Engine) deleteOnce(ctx context.Context, c *Collection, f *query.Filter, limit int, hint bson.RawValue, txn ...*Txn) (int64, error) {
	pks, err := e.candidates(ctx, c, f, nil, hint, limit)
	if err != nil {
		return 0, err
	}
	w := e.newWriter(ctx, c)
	defer w.close()
	if len(txn) > 0 {
		w.txn = txn[0]
	}
	// n counts only what committed: documents removed in a batch whose
	// commit failed are still there.
	for _, pk := range pks {
		matched, _, err := w.modify(pk, f, nil, nil)
		if err != nil {
			// Documents removed before this one stand, as in MongoDB and
			// as n reports.
			if ferr := w.flush(); ferr != nil {
				return int64(w.committed), ferr
			}
			return int64(w.committed), err
		}
		if matched {
			if err := w.done(); err != nil {
				return int64(w.committed), err
			}
			if limit == 1 {
				break
			}
		}
	}
	if w.txn != nil {
		// The statement's result: what this batch and the ones before
		// it remove.
		if err := w.record(w.txn.StmtID, retry.EncodeDelete(int64(w.committed+w.ops))); err != nil {
			return int64(w.committed), err
		}
	}
	err = w.flush()
	return int64(w.committed), err
}
