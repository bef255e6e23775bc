package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/retry"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/ttlindex"
)

// WriteError is the failure of one document of a multi-document write.
type WriteError struct {
	Index int
	Err   error
}

// InsertResult reports an insert command.
type InsertResult struct {
	N      int
	Errors []WriteError
}

// Insert stores docs in db.coll, creating the collection if needed. Ordered
// inserts stop at the first failing document; the ones before it stand.
// At most one WriteOptions applies.
func (e *Engine) Insert(ctx context.Context, db, coll string, docs []bson.Raw, ordered bool, opts ...WriteOptions) (InsertResult, error) {
	if len(opts) > 0 && opts[0].Txn != nil {
		return e.insertRetryable(ctx, db, coll, docs, ordered, opts[0])
	}
	return e.insert(ctx, db, coll, docs, ordered, opts...)
}

// insertRetryable inserts the documents of a retryable write whose
// statements have not run yet; those that have count as inserted.
func (e *Engine) insertRetryable(ctx context.Context, db, coll string, docs []bson.Raw, ordered bool, o WriteOptions) (InsertResult, error) {
	if len(o.StmtIDs) != len(docs) {
		return InsertResult{}, fmt.Errorf("engine: %d statement ids for %d documents", len(o.StmtIDs), len(docs))
	}
	var todo []bson.Raw
	var ids []int32
	var pos []int // of todo's documents in docs
	done := 0
	for i, d := range docs {
		_, ok, err := e.Executed(ctx, o.Txn, o.StmtIDs[i])
		if err != nil {
			return InsertResult{}, err
		}
		if ok {
			done++
			continue
		}
		todo, ids, pos = append(todo, d), append(ids, o.StmtIDs[i]), append(pos, i)
	}
	var res InsertResult
	var err error
	if len(todo) > 0 {
		o.StmtIDs = ids
		res, err = e.insert(ctx, db, coll, todo, ordered, o)
	}
	for k := range res.Errors {
		res.Errors[k].Index = pos[res.Errors[k].Index]
	}
	res.N += done
	return res, err
}

func (e *Engine) insert(ctx context.Context, db, coll string, docs []bson.Raw, ordered bool, opts ...WriteOptions) (InsertResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := e.insertOnce(ctx, db, coll, docs, ordered, opts...)
		if retryConflict(ctx, err, attempt) {
			continue
		}
		return res, err
	}
}

func (e *Engine) insertOnce(ctx context.Context, db, coll string, docs []bson.Raw, ordered bool, opts ...WriteOptions) (InsertResult, error) {
	var res InsertResult
	c, err := e.writeLock(ctx, db, coll, true)
	if me, ok := mongoerr.As(err); ok && me.Code == mongoerr.CommandNotSupportedOnView {
		// As in MongoDB, every document fails on its own, and an ordered
		// insert stops at the first.
		for i := range docs {
			res.Errors = append(res.Errors, WriteError{Index: i, Err: err})
			if ordered {
				break
			}
		}
		return res, nil
	}
	if err != nil {
		return res, err
	}
	defer c.ddl.RUnlock()
	w := e.newWriter(ctx, c)
	defer w.close()
	var stmtIDs []int32
	if len(opts) > 0 {
		w.bypassValidation = opts[0].BypassDocumentValidation
		if t := opts[0].Txn; t != nil {
			w.txn, stmtIDs = t, opts[0].StmtIDs
		}
	}
	// added lists the documents written, in order; the first w.committed
	// of them are committed.
	var added []int
	// lose reports the documents of a batch whose commit failed: each
	// failed (only the first counts for an ordered insert, which stops
	// there). It reports false when the failure is not one a client can be
	// told about document by document.
	lose := func(lost []int, err error) bool {
		var ce *commitError
		errors.As(err, &ce)
		me, ok := mongoerr.As(ce.err)
		if !ok || me.Code == mongoerr.NotWritablePrimary || me.Code == mongoerr.ShutdownInProgress {
			// A server that may not write fails the command, as a
			// primary that steps down does: drivers retry it elsewhere.
			return false
		}
		if ordered {
			lost = lost[:1]
		}
		for _, j := range lost {
			res.Errors = append(res.Errors, WriteError{Index: j, Err: ce.err})
		}
		return true
	}
	for i, raw := range docs {
		if w.txn != nil {
			w.txn.StmtID = stmtIDs[i]
		}
		w.ahead = docs[i:]
		_, err := w.insertOne(raw)
		if err == nil && w.txn != nil {
			err = w.record(stmtIDs[i], retry.EncodeInsert())
		}
		if err == nil {
			added = append(added, i)
			err = w.done()
		}
		if isCommitError(err) {
			lost := added[w.committed:]
			if len(lost) == 0 || lost[len(lost)-1] != i {
				lost = append(lost, i) // it was being written when the commit failed
			}
			added = added[:w.committed]
			if !lose(lost, err) {
				res.N = w.committed
				return res, err
			}
			if ordered {
				break
			}
			continue
		}
		if err == nil {
			continue
		}
		if _, ok := mongoerr.As(err); !ok {
			return res, err
		}
		w.releaseUnwritten()
		res.Errors = append(res.Errors, WriteError{Index: i, Err: err})
		if ordered {
			break
		}
	}
	if err := w.flush(); err != nil {
		if !isCommitError(err) || !lose(added[w.committed:], err) {
			res.N = w.committed
			return res, err
		}
		if ordered {
			// The lost batch came before the statement that stopped the
			// insert, so its first document is the one error to report.
			res.Errors = res.Errors[len(res.Errors)-1:]
		}
	}
	res.N = w.committed
	slices.SortFunc(res.Errors, func(a, b WriteError) int { return a.Index - b.Index })
	return res, nil
}

// insertOne adds one new document to the writer's batch after checking _id
// and unique indexes, and returns it as stored.
func (w *writer) insertOne(raw bson.Raw) (*storedDoc, error) {
	doc, id, err := record.PrepareInsert(raw)
	if err != nil {
		return nil, err
	}
	if err := w.checkValidation(doc, nil); err != nil {
		return nil, err
	}
	d := &storedDoc{pk: w.st.pkOf(id), doc: doc}
	d.h = record.Header{TS: w.e.nowMillis(), TTL: ttlindex.DocTTLOf(bsoncore.Document(doc))}
	ent, err := w.entriesOf(d)
	if err != nil {
		return nil, err
	}
	dk := record.DocKey(nil, w.st.meta.ID, d.pk)
	if _, err := w.lock(w.uniqueKeys(ent, [][]byte{dk})...); err != nil {
		return nil, err
	}
	if w.pendingDoc(dk) {
		// Written by this command a moment ago: live whatever its TTL.
		return nil, w.dupID(id)
	}
	for {
		// Expired documents that hold the same _id or unique keys are purged
		// in the same batch: to clients they are already gone (rule 15).
		old, err := w.load(d.pk)
		if err != nil {
			return nil, err
		}
		if old != nil && !w.st.expired(old.h, d.h.TS) {
			return nil, w.dupID(id)
		}
		victims, extra, err := w.uniqueConflicts(d, ent, d.h.TS)
		if err != nil {
			return nil, err
		}
		if len(extra) > 0 {
			// The victims were read before their locks: another writer
			// may have rewritten or removed them since (an upsert of the
			// expired _id, the reaper), and removing them as read would
			// delete its document or leave its entries. Read again under
			// them.
			if _, err := w.lock(extra...); err != nil {
				return nil, err
			}
			continue
		}
		if old != nil {
			if err := w.remove(old); err != nil {
				return nil, err
			}
		}
		for _, v := range victims {
			if err := w.remove(v); err != nil {
				return nil, err
			}
		}
		break
	}
	if err := w.put(d, ent, nil, nil); err != nil {
		return nil, err
	}
	return d, nil
}

func (w *writer) dupID(id bsoncore.Value) error {
	return duplicateKey(w.st, "_id_", idKeyPattern, bson.D{{Key: "_id", Value: bsonValue(id)}})
}

var idKeyPattern = bson.Raw(bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build())

// uniqueConflicts checks d's unique keys. A key held by a live other
// document is a duplicate key error; one held by an expired document makes
// that document a victim to purge. extra lists the keys of victims not yet
// locked: the caller must lock them and check again.
func (w *writer) uniqueConflicts(d *storedDoc, ent docEntries, nowMs int64) (victims []*storedDoc, extra [][]byte, err error) {
	for i, ix := range w.st.indexes {
		if !ix.Meta.Unique {
			continue
		}
		for _, k := range ent.index[i] {
			pk, err := w.uniqueHolder(ix, k)
			if err != nil {
				return nil, nil, err
			}
			// An expired document holding several of d's keys is one
			// victim: it is purged, and logged, once.
			if pk == nil || bytesEqual(pk, d.pk) || slices.ContainsFunc(victims, func(v *storedDoc) bool { return bytesEqual(v.pk, pk) }) {
				continue
			}
			other, err := w.load(pk)
			if err != nil {
				return nil, nil, err
			}
			if other == nil {
				continue
			}
			if !w.st.expired(other.h, nowMs) {
				return nil, nil, duplicateKey(w.st, ix.Meta.Name, ix.Meta.Key, ix.KeyValue(d.doc))
			}
			if dk := record.DocKey(nil, w.st.meta.ID, pk); !w.holds(dk) {
				extra = append(extra, dk)
			}
			victims = append(victims, other)
		}
	}
	return victims, extra, nil
}

// uniqueHolder returns the primary key that holds key k in unique index ix,
// as the pending transaction leaves it.
func (w *writer) uniqueHolder(ix *record.Index, k []byte) ([]byte, error) {
	v, err := w.reader().Get(w.ctx, ix.EntryKey(nil, k, nil))
	if err == kv.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read unique index entry: %w", err)
	}
	return v, nil
}
