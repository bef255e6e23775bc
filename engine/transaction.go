package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/retry"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// Multi-document transactions.
//
// A Transaction is one kv snapshot transaction (kv.TxnOptions.SnapshotReads)
// that every statement run with its context (WithTransaction) reads and
// writes: reads see the snapshot at its start plus its own writes, through
// index scans too; writes lock the keys whose uniqueness they check, as
// plain writes do, but without waiting, and a key changed after the start
// or held by another transaction is a WriteConflict, which aborts it. The
// writes stay private until Commit stores them, their oplog entry and the
// session's record in one synced kv commit.
//
// The catalog a transaction sees is that of its start: a collection whose
// state changed after it (an index built, collMod) cannot be used
// (SnapshotUnavailable), except one created after it and unchanged since,
// whose key range is empty in the snapshot. A catalog change between a
// statement and the commit aborts the transaction (WriteConflict). A
// statement waits for a collection's ddl lock at most
// TransactionOptions.LockTimeout (LockTimeout), as MongoDB's
// maxTransactionLockRequestTimeoutMillis bounds a transaction's lock
// requests, so a transaction holding key locks never waits behind a
// catalog change that waits for a writer that waits for those keys.
//
// A Transaction serves one statement at a time: the server checks the
// session out for each command, and for an abort.

// DefaultTransactionLockTimeout is MongoDB's default
// maxTransactionLockRequestTimeoutMillis.
const DefaultTransactionLockTimeout = 5 * time.Millisecond

// DefaultTransactionMaxBytes bounds the writes one transaction buffers.
const DefaultTransactionMaxBytes = 64 << 20

// commitStmt is the statement id under which a committed transaction
// records itself in its session's records (package engine/retry), so that
// a commitTransaction retried after a lost reply, after a restart, or on
// another server, finds it committed.
const commitStmt = retry.CommitStmt

// TransactionOptions configure a transaction.
type TransactionOptions struct {
	// Session ties the transaction to its session and number: its oplog
	// entry carries them, and its commit records them (retry.Txn; StmtID
	// is not used).
	Session *Txn
	// LockTimeout bounds a statement's wait for a collection's catalog
	// lock; DefaultTransactionLockTimeout if zero.
	LockTimeout time.Duration
	// At is the transaction's readConcern atClusterTime, zero for the
	// latest. Pebble keeps no versions, so only the latest commit, with
	// none in flight, can be read at (snapshotread.go); another time is
	// SnapshotTooOld, a future one InvalidOptions.
	At oplog.Timestamp
	// MaxBytes bounds the bytes of writes buffered;
	// DefaultTransactionMaxBytes if zero. Past it a statement fails with
	// TransactionTooLarge.
	MaxBytes int
}

// Transaction is an open multi-document transaction.
type Transaction struct {
	e    *Engine
	opts TransactionOptions
	// tx is the kv transaction of a read-write transaction; a snapshot
	// read (BeginSnapshotRead) has none and reads snap, a snapshot the
	// engine's history keeps.
	tx    kv.Txn
	snap  *retainedSnapshot
	start time.Time
	// catalogAt is the engine's catalog counter at the start: a collection
	// state installed after it is not in the transaction's snapshot.
	catalogAt uint64
	// states are the collection states the transaction runs under, and
	// written the collections it wrote.
	states  map[*Collection]*collState
	written map[*Collection]bool
	logged  []oplog.Entry
	wake    int64
	ended   bool
	// docs are the keys of the documents the transaction wrote, by
	// collection id, whose _ts the commit sets to its own time.
	docs map[string]uint64
	// created are the collections the transaction created, on which it
	// may build indexes; true for those it created by create or
	// createIndexes, which its abort drops if they are still empty.
	created map[*Collection]bool
}

type transactionKey struct{}

// WithTransaction returns ctx for a statement of t: the engine's reads and
// writes under it run in t.
func WithTransaction(ctx context.Context, t *Transaction) context.Context {
	return context.WithValue(ctx, transactionKey{}, t)
}

// transactionOf is the transaction a statement runs in, or nil.
func transactionOf(ctx context.Context) *Transaction {
	t, _ := ctx.Value(transactionKey{}).(*Transaction)
	return t
}

// TransactionOf is the transaction or snapshot read that ctx carries, or
// nil.
func TransactionOf(ctx context.Context) *Transaction { return transactionOf(ctx) }

// SnapshotRead reports a read at a cluster time (BeginSnapshotRead)
// rather than a read-write transaction.
func (t *Transaction) SnapshotRead() bool { return t.tx == nil }

// BeginTransaction starts a transaction at the latest committed state.
func (e *Engine) BeginTransaction(ctx context.Context, o TransactionOptions) (*Transaction, error) {
	if err := e.writable(); err != nil {
		return nil, err
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultTransactionLockTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultTransactionMaxBytes
	}
	t := &Transaction{e: e, opts: o, start: e.clock.Now(), states: make(map[*Collection]*collState), written: make(map[*Collection]bool)}
	// The counter is read before the snapshot is taken: a catalog change
	// stores its state after its commit, so one counted before is in the
	// snapshot, and one after may be or not, and is refused.
	if !o.At.IsZero() {
		if err := e.waitClusterTime(ctx, o.At); err != nil {
			return nil, err
		}
	}
	t.catalogAt = e.catalogSeq.Load()
	tx, err := e.store.Begin(ctx, kv.TxnOptions{Pessimistic: true, SnapshotReads: true})
	if err != nil {
		return nil, fmt.Errorf("engine: begin transaction: %w", err)
	}
	if !o.At.IsZero() && !e.exactlyAt(o.At) {
		tx.Rollback()
		return nil, errSnapshotTooOld(o.At)
	}
	t.tx = tx
	return t, nil
}

// reader is what the transaction's statements read: its kv transaction
// (snapshot and own writes), or the snapshot of a snapshot read.
func (t *Transaction) reader() kv.Reader {
	if t.tx != nil {
		return t.tx
	}
	return t.snap.snap
}

// Started is when the transaction began, by the engine's clock.
func (t *Transaction) Started() time.Time { return t.start }

// Ended reports whether the transaction committed or aborted.
func (t *Transaction) Ended() bool { return t.ended }

// errTransactionEnded is a statement of a transaction that is over; the
// server answers NoSuchTransaction before it gets here.
var errTransactionEnded = errors.New("engine: the transaction has ended")

// stateOf is the state of c that t runs under, fixed at its first use.
func (t *Transaction) stateOf(c *Collection) (*collState, error) {
	st := c.st()
	if seen, ok := t.states[c]; ok {
		if seen != st {
			return nil, errCatalogChanged(st)
		}
		return st, nil
	}
	if st.seq > t.catalogAt && st.seq != c.createdSeq {
		e := mongoerr.New(mongoerr.SnapshotUnavailable, "Unable to read from a snapshot due to pending collection catalog changes; please retry the operation. Snapshot timestamp is %v. Collection minimum is later.", t.start.UTC().Format(time.RFC3339Nano))
		e.Labels = []string{"TransientTransactionError"}
		return nil, e
	}
	t.states[c] = st
	return st, nil
}

// writeConflict is MongoDB's WriteConflict inside a transaction, which
// drivers retry whole.
func writeConflict(format string, args ...any) *mongoerr.Error {
	e := mongoerr.New(mongoerr.WriteConflict, format, args...)
	e.Labels = []string{"TransientTransactionError"}
	return e
}

// errCatalogChanged is the WriteConflict of a transaction whose collection
// st changed after it used it.
func errCatalogChanged(st *collState) error {
	return writeConflict("the collection %s changed during the transaction", st.ns())
}

// conflictError turns a kv conflict met by a statement of a transaction
// into WriteConflict; other errors pass.
func conflictError(err error) error {
	if kv.IsConflict(err) {
		return writeConflict("Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.")
	}
	return err
}

// lockCollection share-locks c's catalog lock for a statement of t,
// waiting at most the lock timeout.
func (t *Transaction) lockCollection(ctx context.Context, c *Collection) error {
	deadline := time.Now().Add(t.opts.LockTimeout)
	for !c.ddl.TryRLock() {
		if time.Now().After(deadline) {
			return t.lockTimeout(c)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// lockTimeout is the error of a statement of t that could not take c's
// lock within the lock timeout.
func (t *Transaction) lockTimeout(c *Collection) error {
	e := mongoerr.New(mongoerr.LockTimeout, "Unable to acquire IX lock on '%s' within %v.", c.st().ns(), t.opts.LockTimeout)
	e.Labels = []string{"TransientTransactionError"}
	return e
}

// statementDone takes a writer's pending work into the transaction: its
// oplog entries and the earliest expiry it created.
func (t *Transaction) statementDone(w *writer) error {
	// The entries point into the statement's memory (its request's
	// buffer, which the next request reuses): the transaction keeps copies
	// until its commit.
	for _, ent := range w.logged {
		ent.O, ent.O2 = bytes.Clone(ent.O), bytes.Clone(ent.O2)
		ent.UI, ent.LSID, ent.PreImage = bytes.Clone(ent.UI), bytes.Clone(ent.LSID), bytes.Clone(ent.PreImage)
		t.logged = append(t.logged, ent)
	}
	w.logged = w.logged[:0]
	if w.wake != 0 && (t.wake == 0 || w.wake < t.wake) {
		t.wake = w.wake
	}
	w.wake = 0
	if t.tx.Size() > t.opts.MaxBytes {
		return mongoerr.New(mongoerr.TransactionTooLarge, "Total size of all transaction operations must be less than %d. Actual size is %d", t.opts.MaxBytes, t.tx.Size())
	}
	return nil
}

// Commit stores the transaction's writes, its oplog entry and its session
// record in one synced commit. A collection it wrote whose catalog state
// changed since aborts it with WriteConflict. The transaction has ended
// afterwards, whatever the outcome.
func (t *Transaction) Commit(ctx context.Context) (err error) {
	if t.ended {
		return errTransactionEnded
	}
	if t.tx == nil {
		t.Abort() // a snapshot read writes nothing
		return nil
	}
	t.ended = true
	defer t.tx.Rollback()
	// A failed commit is an abort: what the transaction created goes.
	// Registered first, this runs after the catalog locks below are
	// released.
	defer func() {
		if err != nil {
			t.dropCreated()
		}
	}()
	if t.tx.Empty() {
		return nil
	}
	// Hold the catalog locks of what it wrote, in one order, so that no
	// catalog change lands between the check and the commit.
	colls := make([]*Collection, 0, len(t.written))
	for c := range t.written {
		colls = append(colls, c)
	}
	slices.SortFunc(colls, func(a, b *Collection) int { return strings.Compare(a.st().ns(), b.st().ns()) })
	for i, c := range colls {
		if err := t.lockCollection(ctx, c); err != nil {
			for _, held := range colls[:i] {
				held.ddl.RUnlock()
			}
			return err
		}
	}
	defer func() {
		for _, c := range colls {
			c.ddl.RUnlock()
		}
	}()
	for _, c := range colls {
		if c.st() != t.states[c] {
			return errCatalogChanged(c.st())
		}
	}
	if err := t.stampCommitTime(); err != nil {
		return err
	}
	if s := t.opts.Session; s != nil {
		// On a shared store another server may have ended the number
		// meanwhile (EndUnknownTransaction).
		if t.e.cluster.member != nil {
			if err := retry.CheckCommit(ctx, t.tx, s); err != nil {
				return err
			}
		}
		if err := retry.Record(ctx, t.tx, s, commitStmt, bsoncore.NewDocumentBuilder().Build(), t.e.nowMillis()); err != nil {
			return err
		}
	}
	if err := t.e.commitLogged(ctx, t.tx, kv.Sync, t.oplogEntries()); err != nil {
		if kv.IsConflict(err) {
			// A key written without a lock changed since the start (on
			// a shared store, an index build's entries): the driver runs
			// the transaction again.
			return writeConflict("the transaction conflicted at its commit: %v", err)
		}
		return fmt.Errorf("engine: commit transaction: %w", err)
	}
	if t.wake != 0 {
		t.e.reaper.Wake(timeOfMillis(t.wake))
	}
	return nil
}

// stampCommitTime sets the _ts of every document the transaction wrote to
// the time of its commit, moving their expiry entries with it: a
// transaction's writes happen at its commit, as Cosmos DB's _ts of a
// transaction's documents is the commit's.
func (t *Transaction) stampCommitTime() error {
	nowMs := t.e.nowMillis()
	for dk, collID := range t.docs {
		key := []byte(dk)
		v, ok := t.tx.Buffered(key)
		if !ok || v == nil {
			continue // deleted since
		}
		h, doc, err := record.SplitValue(v)
		if err != nil {
			return err
		}
		if h.TS == nowMs {
			continue
		}
		pk := record.PKOfDocKey(key)
		oldExpiry := record.ExpiryKey(collID, h, pk)
		h.TS = nowMs
		val := append(record.AppendHeader(make([]byte, 0, record.HeaderLen+len(doc)), h), doc...)
		if err := t.tx.Set(key, val); err != nil {
			return err
		}
		if oldExpiry != nil {
			if err := t.tx.Delete(oldExpiry); err != nil {
				return err
			}
		}
		if k := record.ExpiryKey(collID, h, pk); k != nil {
			if err := t.tx.Set(k, expiryValue(doc)); err != nil {
				return err
			}
		}
		if t.wake == 0 || nowMs < t.wake {
			t.wake = nowMs // the reaper looks again; it finds what is due
		}
	}
	return nil
}

// oplogEntries is the transaction's oplog entry: one applyOps command
// holding its operations, with the session, as MongoDB 4.2+ logs a
// transaction that fits in one entry.
func (t *Transaction) oplogEntries() []oplog.Entry {
	if len(t.logged) == 0 {
		return nil
	}
	ent := oplog.ApplyOps(t.logged)
	if s := t.opts.Session; s != nil {
		ent.LSID, ent.TxnNumber = s.LsidDoc(), s.Number
	}
	return []oplog.Entry{ent}
}

// Abort drops the transaction's writes and releases its locks. It may be
// called after Commit, as a no-op.
func (t *Transaction) Abort() {
	if t.ended {
		return
	}
	t.ended = true
	if t.tx != nil {
		t.tx.Rollback()
	}
	t.dropCreated()
	if t.snap != nil {
		t.e.history.release(t.snap)
	}
	t.logged = nil
}

// TransactionCommitted reports whether the transaction s (its session and
// number) committed, from the session's records.
func (e *Engine) TransactionCommitted(ctx context.Context, s *Txn) (bool, error) {
	_, ok, err := e.Executed(ctx, s, commitStmt)
	return ok, err
}

// TxnOutcome is what a session's records say of a transaction number
// (retry.Outcome).
type TxnOutcome = retry.Outcome

// The outcomes of a transaction number.
const (
	TxnUnknown   = retry.Unknown
	TxnCommitted = retry.Committed
	TxnAborted   = retry.Aborted
)

// TransactionOutcome reads what the session's records say of transaction
// s (its session and number): committed, ended by a server that did not
// hold it (EndUnknownTransaction), or neither.
func (e *Engine) TransactionOutcome(ctx context.Context, s *Txn) (TxnOutcome, error) {
	return retry.TransactionOutcome(ctx, e.store, s)
}

// EndUnknownTransaction settles transaction s for a server asked to
// commit or abort it that does not hold it: committed if its commit is
// recorded, else recorded as ended, so that the server that may hold it
// open on the same store can no longer commit it. newest is set, and
// nothing recorded, when the session recorded a newer number.
func (e *Engine) EndUnknownTransaction(ctx context.Context, s *Txn) (o TxnOutcome, newest int64, err error) {
	return retry.EndUnknown(ctx, e.store, s, e.nowMillis())
}

// CheckOutSession checks a session out for a retryable write on a store
// shared with other servers (retry.CheckOut), so that its retryable writes
// run one at a time across them; on a store of one server it does
// nothing, the server's own lock being enough. The caller calls release
// once the write is done.
func (e *Engine) CheckOutSession(ctx context.Context, session [16]byte) (release func(), err error) {
	if e.cluster.member == nil {
		return func() {}, nil
	}
	return retry.CheckOut(ctx, e.store, session)
}

// adoptMultikey takes the state of c after a statement of t marked one of
// its indexes multikey, which was old: a state with the same indexes.
func (t *Transaction) adoptMultikey(c *Collection, old *collState) error {
	st := c.st()
	if st.dropped || len(st.indexes) != len(old.indexes) || st.ttl != old.ttl {
		return errCatalogChanged(st)
	}
	for i, ix := range st.indexes {
		if ix.Meta.ID != old.indexes[i].Meta.ID {
			return errCatalogChanged(st)
		}
	}
	t.states[c] = st
	return nil
}

// readState is the state of c that a read of ctx runs under: c's current
// one, or in a transaction the one the transaction runs under.
func readState(ctx context.Context, c *Collection) (*collState, error) {
	if t := transactionOf(ctx); t != nil {
		return t.stateOf(c)
	}
	return c.st(), nil
}

// LatestTxnNumber is the newest transaction number recorded for session,
// by a committed transaction or a retryable write, and whether there is
// one: what the server knows of a session's numbers after a restart.
func (e *Engine) LatestTxnNumber(ctx context.Context, session [16]byte) (int64, bool, error) {
	return retry.Latest(ctx, e.store, session)
}

// noteCreated records that the transaction created c, by create or
// createIndexes if explicit, or by an insert.
func (t *Transaction) noteCreated(c *Collection, explicit bool) {
	if t.created == nil {
		t.created = make(map[*Collection]bool)
	}
	t.created[c] = t.created[c] || explicit
}

// dropCreated drops, at an abort or a failed commit, the collections the
// transaction created by create or createIndexes if they are still empty.
// One an insert created stays, as before transactions could create them;
// MongoDB's goes too (a difference docs/compatibility.md states).
func (t *Transaction) dropCreated() {
	for c, explicit := range t.created {
		if explicit {
			t.e.dropIfEmpty(c)
		}
	}
}

// dropIfEmpty drops c, created by a transaction that aborted, unless a
// document landed in it meanwhile: MongoDB's collection created in a
// transaction goes with its abort, and one another client wrote to stays.
// Best effort: an error leaves the collection, as a plain create would.
func (e *Engine) dropIfEmpty(c *Collection) {
	ctx := context.Background()
	st := c.st()
	if st.dropped {
		return
	}
	if _, err := e.dropCollectionIf(ctx, st.meta.DB, st.meta.Name, func(cur *collState) bool {
		return cur.meta.ID == st.meta.ID && e.collectionEmpty(ctx, st.meta.ID)
	}); err != nil {
		e.log.Debug("transaction: dropping a collection it created", zap.Error(err))
	}
}

// collectionEmpty reports whether collection id stores no document; false
// if the store cannot tell.
func (e *Engine) collectionEmpty(ctx context.Context, id uint64) bool {
	lo, hi := record.DocRange(id)
	it, err := e.store.Iter(ctx, lo, hi, false)
	if err != nil {
		return false
	}
	defer it.Close()
	return !it.First()
}

// indexesInTransaction builds indexes in a transaction: only on a
// collection the transaction created, as MongoDB 4.4+ allows; then the
// transaction's own documents of it get their entries, which the build,
// reading committed documents, could not give them, and the transaction
// runs under the collection's new state.
func (t *Transaction) indexesInTransaction(ctx context.Context, c *Collection, build func() (CreateIndexesResult, error)) (CreateIndexesResult, error) {
	if _, ok := t.created[c]; !ok {
		return CreateIndexesResult{}, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create new indexes on existing collection %s in a multi-document transaction.", c.st().ns())
	}
	old := c.st()
	res, err := build()
	if err != nil {
		return res, err
	}
	st := c.st()
	if st.dropped || st.meta.ID != old.meta.ID {
		return res, errCatalogChanged(st)
	}
	var added []*record.Index
	for _, ix := range st.indexes {
		if !slices.ContainsFunc(old.indexes, func(o *record.Index) bool { return o.Meta.ID == ix.Meta.ID }) {
			added = append(added, ix)
		}
	}
	for dk, collID := range t.docs {
		if collID != st.meta.ID {
			continue
		}
		v, ok := t.tx.Buffered([]byte(dk))
		if !ok || v == nil {
			continue
		}
		_, doc, err := record.SplitValue(v)
		if err != nil {
			return res, err
		}
		pk := record.PKOfDocKey([]byte(dk))
		for _, ix := range added {
			keys, multi, err := ix.Keys(bson.Raw(doc))
			if err != nil {
				return res, err
			}
			if multi && !ix.Meta.Multikey {
				if err := t.markMultikey(ctx, c, ix); err != nil {
					return res, err
				}
				ix.Meta.Multikey = true // this loop's copy; the state is read again below
			}
			for _, k := range keys {
				if ix.Meta.Unique {
					uk := ix.EntryKey(nil, k, nil)
					if err := t.tx.LockKeys(ctx, kv.LockOptions{NoWait: true}, uk); err != nil {
						return res, conflictError(err)
					}
					if _, err := t.tx.Get(ctx, uk); err == nil {
						return res, mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: %s index: %s", st.ns(), ix.Meta.Name)
					}
				}
				if err := t.tx.Set(ix.EntryKey(nil, k, pk), pk); err != nil {
					return res, err
				}
			}
		}
	}
	if st = c.st(); st.dropped || st.meta.ID != old.meta.ID {
		return res, errCatalogChanged(st)
	}
	t.states[c] = st
	return res, nil
}

// markMultikey marks ix of c multikey for a document of the transaction,
// under c's catalog lock, as a writer does.
func (t *Transaction) markMultikey(ctx context.Context, c *Collection, ix *record.Index) error {
	if err := t.lockCollection(ctx, c); err != nil {
		return err
	}
	defer c.ddl.RUnlock()
	return t.e.markMultikey(ctx, c, ix)
}
