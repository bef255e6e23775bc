package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/retry"
	"github.com/lethedb/lethe/internal/invariants"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/validation"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// Group commits: a multi-document command adds documents to one batch until
// it holds this many, then commits with one WAL sync. MongoDB's contract is
// per-document atomicity, which each batch still gives.
const (
	maxBatchOps   = 1000
	maxBatchBytes = 8 << 20
)

// writer accumulates the writes of one command into synced transactions,
// holding the locks of every key it has checked (documents' primary keys
// and unique index entries) until the transaction commits.
type writer struct {
	e   *Engine
	c   *Collection
	st  *collState
	ctx context.Context
	tx  kv.Txn // pessimistic; nil until the first lock or write
	// held are the keys locked in tx, to lock again after a flush.
	held [][]byte
	ops  int // documents done in the pending transaction
	// committed counts the documents done in batches that committed: what
	// a command may report as written when a later commit fails.
	committed int
	wake      int64 // earliest expiry created, for the reaper; 0 if none
	// ahead are the documents an insert has yet to write, the one being
	// written first, for the store's size hint (sizeHint); nil elsewhere.
	ahead []bson.Raw
	// noSync commits without waiting for the WAL sync, for writes that are
	// not acknowledged to a client.
	noSync bool
	// bypassValidation skips the collection's validator (checkValidation).
	bypassValidation bool
	// now is the time of the command, $$NOW in the validator; zero means
	// the clock at the first checked write.
	now time.Time
	// validator is the collection's validator for this command, compiled
	// at its first checked write.
	validator *query.Filter
	// logged are the oplog entries of the pending batch, appended to it at
	// commit (oplog.go); replacement logs updates as whole documents
	// rather than diffs.
	logged      []oplog.Entry
	replacement bool
	// txn, for a retryable write, ties the entries logged to its
	// statement txn.StmtID and records statements' results (retry.go).
	txn *Txn
	// multi is the multi-document transaction the statement runs in, nil
	// for a plain write: tx is then its kv transaction, which the writer
	// never commits (transaction.go). written are the documents this
	// statement wrote there, which its kv transaction's buffer does not
	// tell from those of the transaction's earlier statements.
	multi   *Transaction
	written map[string]struct{}
}

// newWriter is the writer of one statement on c, in the transaction of
// ctx if it has one.
func (e *Engine) newWriter(ctx context.Context, c *Collection) *writer {
	w := &writer{e: e, c: c, st: c.st(), ctx: ctx}
	if t := transactionOf(ctx); t != nil {
		if st := t.states[c]; st != nil {
			w.st = st
		}
		w.multi, w.tx = t, t.tx
		t.written[c] = true
	}
	return w
}

// begin returns the pending transaction, begun on first use.
func (w *writer) begin() (kv.Txn, error) {
	if w.tx == nil {
		tx, err := w.e.store.Begin(w.ctx, kv.TxnOptions{Pessimistic: true, SizeHint: w.sizeHint()})
		if err != nil {
			return nil, fmt.Errorf("engine: begin: %w", err)
		}
		w.tx = tx
	}
	return w.tx, nil
}

// sizeHint estimates the bytes a transaction begun now writes: the
// documents ahead that it will hold, at most maxBatchOps and a
// transaction's bytes, as records with their keys and headers, and again
// in their oplog entries with theirs. The overheads are measured
// (TestInsertHintsEachTransaction): about 280 bytes a document with the
// oplog. A transaction begins once per maxBatchOps documents at most, so
// the sum costs no more than the writes it sizes.
func (w *writer) sizeHint() int {
	const recordOverhead, oplogOverhead = 48, 240
	docs := w.ahead[:min(len(w.ahead), maxBatchOps)]
	size := 0
	for _, d := range docs {
		size += len(d)
	}
	size = min(size, maxBatchBytes)
	n := size + len(docs)*recordOverhead
	if w.e.oplog != nil {
		n += size + len(docs)*oplogOverhead
	}
	return n
}

// reader reads what the pending transaction leaves: its own writes over
// the latest committed state.
func (w *writer) reader() kv.Reader {
	if w.tx != nil {
		return w.tx
	}
	return w.e.store
}

// lock makes sure keys are locked. A writer that holds no lock waits for
// them; one that holds some only takes free ones, and if one is busy it
// commits what is pending, releases everything and waits for the union, so
// that two writers never wait for each other. It reports whether that
// happened, in which case the caller must re-read what it read under the
// old locks.
func (w *writer) lock(keys ...[]byte) (relocked bool, err error) {
	tx, err := w.begin()
	if err != nil {
		return false, err
	}
	if w.multi != nil {
		// In a transaction a key held by another, or changed since its
		// snapshot, is a WriteConflict at once, as in MongoDB.
		if err := tx.LockKeys(w.ctx, kv.LockOptions{NoWait: true}, keys...); err != nil {
			return false, conflictError(err)
		}
		w.held = append(w.held, keys...)
		return false, nil
	}
	if len(w.held) == 0 {
		if err := w.waitLock(tx, keys); err != nil {
			return false, err
		}
		w.held = append(w.held, keys...)
		w.checkHeld()
		return false, nil
	}
	err = tx.LockKeys(w.ctx, kv.LockOptions{NoWait: true}, keys...)
	if err == nil {
		w.held = append(w.held, keys...)
		w.checkHeld()
		return false, nil
	}
	// A conflict is a busy key too: TiKV may report another writer's
	// lock as a deadlock or a newer commit rather than as held.
	if !errors.Is(err, kv.ErrLocked) && !kv.IsConflict(err) {
		return false, err
	}
	keep := append(w.held[:len(w.held):len(w.held)], keys...)
	if err := w.flush(); err != nil {
		return true, err
	}
	if tx, err = w.begin(); err != nil {
		return true, err
	}
	if err := w.waitLock(tx, keep); err != nil {
		return true, err
	}
	w.held = keep
	w.checkHeld()
	return true, nil
}

// tryLock locks key unless another transaction holds it, for work that
// can come back later: it reports false, holding nothing new, if one does.
func (w *writer) tryLock(key []byte) (bool, error) {
	tx, err := w.begin()
	if err != nil {
		return false, err
	}
	err = tx.LockKeys(w.ctx, kv.LockOptions{NoWait: true}, key)
	if errors.Is(err, kv.ErrLocked) || kv.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	w.held = append(w.held, key)
	w.checkHeld()
	return true, nil
}

// checkHeld asserts that the transaction holds every lock the writer
// counts on.
func (w *writer) checkHeld() {
	if invariants.Enabled {
		for _, k := range w.held {
			invariants.Check(w.tx.Locked(k), "the writer counts on the lock of %x, which its transaction does not hold", k)
		}
	}
}

// waitLock waits for keys in tx, which holds no lock. A wait that passes the
// store's bound (a conflict) waits again rather than fail the write: a plain
// write waits for its locks as long as it takes, as MongoDB's do, and
// holding none it cannot be part of a cycle. Only the request's context
// ends the wait.
func (w *writer) waitLock(tx kv.Txn, keys [][]byte) error {
	for {
		err := tx.LockKeys(w.ctx, kv.LockOptions{}, keys...)
		if err == nil || !kv.IsConflict(err) || w.ctx.Err() != nil {
			return err
		}
	}
}

// unheld returns those of keys the writer does not hold, in keys' array.
func (w *writer) unheld(keys [][]byte) [][]byte {
	out := keys[:0]
	for _, k := range keys {
		if !w.holds(k) {
			out = append(out, k)
		}
	}
	return out
}

// holds reports whether the writer holds the lock of key.
func (w *writer) holds(key []byte) bool { return w.tx != nil && w.tx.Locked(key) }

// commitError is a failed commit of a writer's transaction: every document
// written since the previous commit is lost, whichever statement the caller
// was working on when it happened.
type commitError struct {
	err error
	// first is set when the writer had committed nothing before: the
	// statement left no trace and may run again.
	first bool
}

func (e *commitError) Error() string { return "engine: commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

func isCommitError(err error) bool {
	var ce *commitError
	return errors.As(err, &ce)
}

// maxConflictAttempts bounds how often retryConflict runs a statement
// again.
const maxConflictAttempts = 100

// retryConflict reports whether a plain statement (not one of a
// multi-document transaction) runs again after err, its attempt-th: a
// commit that met a write conflict before the statement committed
// anything. MongoDB retries the write conflicts of single statements
// itself and never reports them. On pebble a plain commit never conflicts,
// since every key it writes is locked first; on TiKV one can, through keys
// written without a lock, and on client-go's mock, whose prewrite checks
// every key of a pessimistic transaction against its start, through any.
// A statement that committed part of its documents before the conflict
// reports it instead: running it again could apply an update twice.
func retryConflict(ctx context.Context, err error, attempt int) bool {
	var ce *commitError
	return errors.As(err, &ce) && ce.first && kv.IsConflict(ce.err) && attempt < maxConflictAttempts && ctx.Err() == nil
}

// done marks one document's writes complete and commits when the
// transaction is full.
func (w *writer) done() error {
	w.ops++
	if w.multi != nil {
		return nil // the transaction commits as a whole
	}
	if w.ops >= maxBatchOps || (w.tx != nil && w.tx.Size() >= maxBatchBytes) {
		return w.flush()
	}
	return nil
}

// flush commits pending writes with a WAL sync and releases the locks.
func (w *writer) flush() error {
	if w.multi != nil {
		w.committed += w.ops
		w.ops = 0
		return w.multi.statementDone(w)
	}
	tx := w.tx
	if tx == nil {
		return nil
	}
	ops := w.ops
	invariants.Check(ops <= maxBatchOps, "a writer's transaction holds %d documents, over the cap of %d", ops, maxBatchOps)
	w.tx, w.ops, w.held = nil, 0, w.held[:0]
	logged := w.logged
	w.logged = w.logged[:0]
	if tx.Empty() {
		tx.Rollback()
		return nil
	}
	d := kv.Sync
	if w.noSync {
		d = kv.NoSync
	}
	if err := w.e.commitLogged(w.ctx, tx, d, logged); err != nil {
		return &commitError{err: err, first: w.committed == 0}
	}
	w.committed += ops
	if w.wake != 0 {
		w.e.reaper.Wake(timeOfMillis(w.wake))
		w.wake = 0
	}
	return nil
}

// releaseUnwritten releases the locks of a plain writer that has written
// nothing since its last commit: those of a document it then left alone
// (a duplicate key, a document that no longer matched). They protect
// nothing any more, and keeping them can cost another transaction a
// conflict: on TiKV the first key a transaction locks is its primary,
// committed even unwritten (as a lock record) once something else in the
// transaction is written (a later document, a retryable write's record),
// and a MongoDB transaction that started before then meets that record as
// a write conflict on a document nothing changed.
func (w *writer) releaseUnwritten() {
	if w.multi != nil || w.tx == nil || !w.tx.Empty() {
		return
	}
	invariants.Check(w.ops == 0, "a writer with an empty transaction counts %d documents written", w.ops)
	w.tx.Rollback()
	w.tx, w.held = nil, w.held[:0]
}

// close drops uncommitted writes and releases the locks.
func (w *writer) close() {
	if w.multi != nil {
		// What the statement left unflushed stays in the transaction,
		// which aborts on the statement's error.
		w.tx, w.multi = nil, nil
		w.held = w.held[:0]
		return
	}
	if w.tx != nil {
		w.tx.Rollback()
		w.tx = nil
	}
	w.logged = w.logged[:0]
	w.held = w.held[:0]
}

// storedDoc is a document as stored: primary key, header and BSON.
type storedDoc struct {
	pk  []byte
	h   record.Header
	doc bson.Raw
}

// docEntries are the derived keys of one document: index entries and the
// expiry entry.
type docEntries struct {
	index  [][][]byte // per index of st.indexes, encoded keys without pk
	expiry []byte
}

func (w *writer) entriesOf(d *storedDoc) (docEntries, error) {
	var ent docEntries
	ent.index = make([][][]byte, len(w.st.indexes))
	marked := false
	defer func() {
		if marked {
			w.st = w.c.st()
		}
	}()
	for i, ix := range w.st.indexes {
		keys, multi, err := ix.Keys(d.doc)
		if err != nil {
			return ent, err
		}
		if multi && !ix.Meta.Multikey {
			if err := w.e.markMultikey(context.TODO(), w.c, ix); err != nil {
				return ent, err
			}
			marked = true
			if w.multi != nil {
				// The flag is set outside the transaction, and stays if it
				// aborts: a multikey index that holds no array yet is
				// only read with more care. Any other change of the
				// catalog meanwhile is a conflict.
				if err := w.multi.adoptMultikey(w.c, w.st); err != nil {
					return ent, err
				}
			}
		}
		ent.index[i] = keys
	}
	ent.expiry = expiryKey(w.st.meta.ID, d)
	return ent, nil
}

// expiryKey is the document's entry in one of the two expiry families; nil
// for ttl -1, which never expires.
func expiryKey(collID uint64, d *storedDoc) []byte { return record.ExpiryKey(collID, d.h, d.pk) }

// expiryValue is what an expiry entry holds: the document's {_id}, as its
// oplog delete entry names it, so that the reaper can purge a document of
// a collection without secondary indexes without reading it (purgeByEntries).
// Entries written before they held it are empty; the reaper reads their
// documents.
func expiryValue(doc bson.Raw) []byte { return oplog.IDDoc(record.IDOf(doc)) }

// uniqueKeys appends the entry keys of a document's unique index keys:
// what a writer locks to check them.
func (w *writer) uniqueKeys(ent docEntries, dst [][]byte) [][]byte {
	for i, ix := range w.st.indexes {
		if ix.Meta.Unique {
			for _, k := range ent.index[i] {
				dst = append(dst, ix.EntryKey(nil, k, nil))
			}
		}
	}
	return dst
}

// put writes d with its entries, replacing old (nil for a new document).
func (w *writer) put(d *storedDoc, ent docEntries, old *storedDoc, oldEnt *docEntries) error {
	b, err := w.begin()
	if err != nil {
		return err
	}
	if old != nil {
		if err := w.deleteEntries(old, oldEnt, &ent); err != nil {
			return err
		}
	}
	val := record.AppendHeader(make([]byte, 0, record.HeaderLen+len(d.doc)), d.h)
	val = append(val, d.doc...)
	dk := record.DocKey(nil, w.st.meta.ID, d.pk)
	// Every write of a document holds its lock: the uniqueness checks and
	// the read-modify-write of updates depend on it.
	invariants.Check(!invariants.Enabled || w.holds(dk), "a write of %x without its lock", dk)
	if err := b.Set(dk, val); err != nil {
		return err
	}
	if t := w.multi; t != nil {
		if t.docs == nil {
			t.docs = make(map[string]uint64)
		}
		t.docs[string(dk)] = w.st.meta.ID
		if w.written == nil {
			w.written = make(map[string]struct{})
		}
		w.written[string(dk)] = struct{}{}
	}
	w.logPut(d, old)
	for i, ix := range w.st.indexes {
		for _, k := range ent.index[i] {
			if oldEnt != nil && containsKey(oldEnt.index[i], k) {
				continue
			}
			if err := b.Set(ix.EntryKey(nil, k, d.pk), d.pk); err != nil {
				return err
			}
		}
	}
	if ent.expiry != nil && (oldEnt == nil || !bytesEqual(oldEnt.expiry, ent.expiry)) {
		if err := b.Set(ent.expiry, expiryValue(d.doc)); err != nil {
			return err
		}
	}
	if at, ok := ttlindex.ExpireAt(w.st.ttl, d.h.TS, d.h.TTL); ok && (w.wake == 0 || at < w.wake) {
		w.wake = at
	}
	return nil
}

// deleteEntries removes old's index and expiry entries, except those keep
// also has.
func (w *writer) deleteEntries(old *storedDoc, oldEnt *docEntries, keep *docEntries) error {
	b, err := w.begin()
	if err != nil {
		return err
	}
	for i, ix := range w.st.indexes {
		for _, k := range oldEnt.index[i] {
			if keep != nil && containsKey(keep.index[i], k) {
				continue
			}
			if ix.Meta.Unique && ix.Meta.Building {
				// The backfill may not have reached old yet, and another
				// document may have taken the key meanwhile: its entry
				// stays (TestBuildingUniqueIndexKeepsAnothersEntry). A key
				// with no entry is deleted all the same, so that a
				// backfill batch that read old as it was conflicts.
				holder, err := w.uniqueHolder(ix, k)
				if err != nil {
					return err
				}
				if holder != nil && !bytesEqual(holder, old.pk) {
					continue
				}
			}
			if err := b.Delete(ix.EntryKey(nil, k, old.pk)); err != nil {
				return err
			}
		}
	}
	if oldEnt.expiry != nil && (keep == nil || !bytesEqual(oldEnt.expiry, keep.expiry)) {
		return b.Delete(oldEnt.expiry)
	}
	return nil
}

// remove deletes d and all its entries.
func (w *writer) remove(d *storedDoc) error {
	ent, err := w.entriesOf(d)
	if err != nil {
		return fmt.Errorf("engine: entries of stored document: %w", err)
	}
	if err := w.deleteEntries(d, &ent, nil); err != nil {
		return err
	}
	return w.delete(d)
}

// delete deletes the document d, whose entries are already deleted.
func (w *writer) delete(d *storedDoc) error {
	b, err := w.begin()
	if err != nil {
		return err
	}
	w.logDelete(d)
	dk := record.DocKey(nil, w.st.meta.ID, d.pk)
	invariants.Check(!invariants.Enabled || w.holds(dk), "a delete of %x without its lock", dk)
	return b.Delete(dk)
}

// load reads the document at pk as the pending transaction leaves it; nil
// if there is none.
func (w *writer) load(pk []byte) (*storedDoc, error) {
	return w.e.loadDoc(w.ctx, w.reader(), w.st.meta.ID, pk)
}

// pendingDoc reports whether this command writes the document at key dk
// (and does not delete it). In a multi-document transaction the buffer
// also holds earlier statements' writes, which expire like any document
// (TTL rule 15), so only this statement's count.
func (w *writer) pendingDoc(dk []byte) bool {
	if w.tx == nil {
		return false
	}
	if w.multi != nil {
		if _, ok := w.written[string(dk)]; !ok {
			return false
		}
	}
	v, ok := w.tx.Buffered(dk)
	return ok && v != nil
}

// duplicateKey is MongoDB's E11000 error for an index.
func duplicateKey(st *collState, ixName string, keyPattern bson.Raw, keyValue bson.D) error {
	kv, _ := bson.MarshalExtJSON(keyValue, false, false)
	e := mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s index: %s dup key: %s", st.ns(), ixName, kv)
	e.Extra = bson.D{{Key: "keyPattern", Value: keyPattern}, {Key: "keyValue", Value: keyValue}}
	return e
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytesEqual(x, k) {
			return true
		}
	}
	return false
}

// WriteOptions are per-command options of the write paths.
type WriteOptions struct {
	// BypassDocumentValidation skips the collection's validator.
	BypassDocumentValidation bool
	// Txn, when set, makes the insert a retryable write whose documents
	// are the statements StmtIDs (their ids, in order).
	Txn     *Txn
	StmtIDs []int32
}

// checkValidation applies the collection's validator to a document about
// to be written. old is the document it replaces, nil for an insert.
func (w *writer) checkValidation(doc bson.Raw, old bson.Raw) error {
	v := w.st.validator
	if v == nil || w.bypassValidation || v.Level == validation.LevelOff {
		return nil
	}
	if w.validator == nil {
		if w.now.IsZero() {
			w.now = w.e.clock.Now()
		}
		w.validator = v.FilterAt(w.now)
	}
	if w.validator.Match(doc) {
		return nil
	}
	// Under moderate, documents that already failed may stay failing.
	if old != nil && v.Level == validation.LevelModerate && !w.validator.Match(old) {
		return nil
	}
	if v.Action == validation.ActionWarn {
		w.e.log.Warn("Document would fail validation", zap.String("namespace", w.st.ns()),
			zap.Stringer("document", idOfRaw(doc)))
		return nil
	}
	err := mongoerr.New(mongoerr.DocumentValidationFailure, "Document failed validation")
	err.Extra = bson.D{{Key: "errInfo", Value: bson.D{
		{Key: "failingDocumentId", Value: idOfRaw(doc)},
		{Key: "details", Value: validation.Details(v.Raw, doc)},
	}}}
	return err
}

func idOfRaw(doc bson.Raw) bson.RawValue {
	id := record.IDOf(doc)
	return bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}
}

// Txn ties a write to a statement of a retryable write (retry.Txn).
type Txn = retry.Txn

// CheckTxn compares t.Number with the session's newest one: an older
// number is TransactionTooOld, as in MongoDB.
func (e *Engine) CheckTxn(ctx context.Context, t *Txn) error { return retry.Check(ctx, e.store, t) }

// Executed returns the recorded result of statement stmt of t's
// transaction, if it committed.
func (e *Engine) Executed(ctx context.Context, t *Txn, stmt int32) (bson.Raw, bool, error) {
	return retry.Executed(ctx, e.store, t, stmt)
}

// executedStmt is Executed of t's own statement; nothing when t is nil.
func (e *Engine) executedStmt(ctx context.Context, t *Txn) (bson.Raw, bool, error) {
	if t == nil {
		return nil, false, nil
	}
	return e.Executed(ctx, t, t.StmtID)
}

// ForgetRetries deletes the records of the sessions ids that were last
// written before before (any, if before is zero).
func (e *Engine) ForgetRetries(ctx context.Context, ids [][16]byte, before time.Time) error {
	return retry.Forget(ctx, e.store, ids, before)
}

// ExpiredRetries lists the sessions whose records were last written
// before before.
func (e *Engine) ExpiredRetries(ctx context.Context, before time.Time) ([][16]byte, error) {
	return retry.Expired(ctx, e.store, before)
}

// record adds the result of statement stmt of the writer's transaction to
// its pending batch, so that it commits with the write.
func (w *writer) record(stmt int32, result []byte) error {
	b, err := w.begin()
	if err != nil {
		return err
	}
	return retry.Record(context.TODO(), b, w.txn, stmt, result, w.e.nowMillis())
}
