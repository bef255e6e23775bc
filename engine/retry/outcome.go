package retry

// Transaction outcomes across servers. A multi-document transaction lives
// in the memory of the server that runs its statements (drivers pin them
// to one mongos, and Lethe's servers answer as mongos do); its commit
// records itself under CommitStmt in the session's records, in the kv
// transaction of the commit. A commitTransaction or abortTransaction that
// reaches another server (a driver retries them on any server after a
// network error) is answered from the records: committed if the commit is
// recorded. If it is not, the transaction may still be open on its own
// server, whose commit could land after the driver, told
// NoSuchTransaction, ran it again under a new number: so the other server
// first records the number as ended without a commit (AbortStmt, EndUnknown),
// and a commit on a shared store checks, under the lock of the session's
// header, that no record of its number or a newer one was written since
// the transaction began (CheckCommit). Whichever of the two writes the
// header first decides.
//
//	t lsid(16) 0x02 CommitStmt   txnNumber(8) {}   the number committed
//	t lsid(16) 0x02 AbortStmt    txnNumber(8) {}   the number ended unknown
//
// Both are statements of the session's records: they go with it, and a
// newer number's records make them stale, as any statement's.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

const (
	// CommitStmt is the statement id under which a committed transaction
	// records itself, so that a commitTransaction retried after a lost
	// reply, a restart, or on another server finds it committed.
	CommitStmt int32 = -1
	// AbortStmt is the statement id under which a server records a
	// transaction number it was asked to end and found neither open in
	// its memory nor committed in the store.
	AbortStmt int32 = -2
)

// Outcome is what the records say of a transaction number.
type Outcome int

const (
	// Unknown: neither committed nor ended by another server; the number
	// may be a retryable write's, or a transaction open somewhere.
	Unknown Outcome = iota
	Committed
	Aborted
)

// TransactionOutcome reads what the records say of transaction t.Number.
func TransactionOutcome(ctx context.Context, store kv.Reader, t *Txn) (Outcome, error) {
	for _, c := range []struct {
		stmt int32
		o    Outcome
	}{{CommitStmt, Committed}, {AbortStmt, Aborted}} {
		n, ok, err := stmtNumber(ctx, store, t.Session, c.stmt)
		if err != nil {
			return Unknown, err
		}
		if ok && n == t.Number {
			return c.o, nil
		}
	}
	return Unknown, nil
}

// stmtNumber reads the number statement stmt of session was recorded
// under, if it was.
func stmtNumber(ctx context.Context, store kv.Reader, session [16]byte, stmt int32) (int64, bool, error) {
	v, err := store.Get(ctx, record.TxnStmtKey(session, stmt))
	if err == kv.ErrNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("engine: read statement record: %w", err)
	}
	if len(v) < 8 {
		return 0, false, fmt.Errorf("engine: statement record of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// EndUnknown settles transaction t.Number for a server that does not hold
// it: it returns Committed if its commit is recorded; otherwise it
// records the number as ended (AbortStmt) and returns Aborted, so that the
// server holding it open can no longer commit it. newest is the newest
// number recorded for the session before, if one is newer than t.Number,
// in which case nothing is recorded and the outcome is Unknown.
func EndUnknown(ctx context.Context, store kv.Store, t *Txn, nowMillis int64) (o Outcome, newest int64, err error) {
	b, err := store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err != nil {
		return Unknown, 0, fmt.Errorf("engine: begin: %w", err)
	}
	defer b.Rollback()
	hk := record.TxnHeaderKey(t.Session)
	// The header's lock orders this against a commit of the number on the
	// server that holds it, which takes the same lock (CheckCommit); the
	// checkout's against a retryable write of the session on any server,
	// whose kv transaction writes the header without its lock (CheckOut).
	if err := b.LockKeys(ctx, kv.LockOptions{}, record.TxnCheckoutKey(t.Session), hk); err != nil {
		return Unknown, 0, fmt.Errorf("engine: lock session record: %w", err)
	}
	latest, ok, err := Latest(ctx, b, t.Session)
	if err != nil {
		return Unknown, 0, err
	}
	if ok && latest > t.Number {
		return Unknown, latest, nil
	}
	if o, err := TransactionOutcome(ctx, b, t); err != nil || o != Unknown {
		return o, 0, err
	}
	rec := *t
	rec.clearAll = false
	if err := Record(ctx, b, &rec, AbortStmt, bsoncore.NewDocumentBuilder().Build(), nowMillis); err != nil {
		return Unknown, 0, err
	}
	if _, err := b.Commit(ctx, kv.Sync); err != nil {
		return Unknown, 0, fmt.Errorf("engine: record an ended transaction: %w", err)
	}
	return Aborted, 0, nil
}

// errEnded is the commit of a transaction another server ended meanwhile.
func errEnded(n int64) error {
	return mongoerr.New(mongoerr.NoSuchTransaction, "Transaction with { txnNumber: %d, txnRetryCounter: 0 } has been aborted.", n)
}

// CheckCommit is called by the commit of transaction t.Number on a shared
// store, in tx, its kv transaction (pessimistic, reading its start's
// snapshot), before its records are written: it locks the session's
// header and fails with NoSuchTransaction if another server recorded a
// number for the session since the transaction began (its lock fails on
// a key written after the start) or before it, at t.Number or newer
// (EndUnknown, a retryable write, another transaction).
func CheckCommit(ctx context.Context, tx kv.Txn, t *Txn) error {
	hk := record.TxnHeaderKey(t.Session)
	if err := tx.LockKeys(ctx, kv.LockOptions{NoWait: true}, hk); err != nil {
		if kv.IsConflict(err) || errors.Is(err, kv.ErrLocked) {
			return errEnded(t.Number)
		}
		return fmt.Errorf("engine: lock session record: %w", err)
	}
	latest, ok, err := Latest(ctx, tx, t.Session)
	if err != nil {
		return err
	}
	if ok && latest >= t.Number {
		return errEnded(t.Number)
	}
	return nil
}

// CheckOut checks session out for a retryable write on a store shared
// with other servers, as mongod checks a session out of its catalog for
// each command: it locks the session's checkout key (never written) in a
// kv transaction of its own, waiting while another server holds it, until
// ctx ends. The caller runs the write, then calls release. Without it, a
// driver's retry that reaches another server while the first attempt
// still runs would find no record yet and apply the statements a second
// time. The write's own kv transaction never takes this lock, so the two
// never wait for each other; a server that dies holding it loses it with
// its kv transaction's lock lifetime.
func CheckOut(ctx context.Context, store kv.Store, session [16]byte) (release func(), err error) {
	b, err := store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err != nil {
		return nil, fmt.Errorf("engine: begin: %w", err)
	}
	key := record.TxnCheckoutKey(session)
	for {
		err := b.LockKeys(ctx, kv.LockOptions{}, key)
		if err == nil {
			return b.Rollback, nil
		}
		// A wait past the store's bound is a conflict: wait again, as a
		// plain write waits for its locks, until the request ends.
		if !kv.IsConflict(err) || ctx.Err() != nil {
			b.Rollback()
			return nil, fmt.Errorf("engine: check the session out: %w", err)
		}
	}
}
