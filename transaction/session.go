package transaction

import (
	"context"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// State is the state of a session's latest transaction number.
type State int

const (
	// None: the number is a retryable write's, or no number was used.
	None State = iota
	InProgress
	Committed
	Aborted
)

// Session is one session's transaction state. The fields without a mutex
// are used under the session's checkout only.
type Session struct {
	r    *Registry
	key  string
	slot chan struct{} // holds a token while checked out
	// forgotten says the session was dropped from the registry; whoever
	// checks it out next looks it up again.
	forgotten bool
	tx        *engine.Transaction // the open transaction, nil if none
	// recalled says the session's recorded numbers were read from the
	// store (recall), which a session new to this process needs.
	recalled bool

	mu      sync.Mutex // a leaf; guards what follows
	number  int64      // the latest transaction number, -1 for none
	state   State
	started time.Time
	expires time.Time
	// active says a command has the session, since when, and activeFor
	// sums the time the open transaction's commands had it.
	active    bool
	since     time.Time
	activeFor time.Duration
	// doomed asks the command that has the session to abort transaction
	// doomedNumber when it checks the session in; forgetAtCheckIn to drop
	// the session then, after aborting whatever is open.
	doomed          bool
	doomedNumber    int64
	forgetAtCheckIn bool
}

// Stmt is a command of a transaction, as its fields say.
type Stmt struct {
	Number int64
	// Start is startTransaction: true.
	Start bool
	// Command is the command's name.
	Command string
	// ID is the engine's identity of the session and its lsid document,
	// for the transaction's oplog entry and its commit record.
	ID [16]byte
	// Lsid is the session's {id, uid} document.
	Lsid []byte
	// At is the first statement's readConcern atClusterTime, zero for
	// none: the transaction reads at it.
	At oplog.Timestamp
	// Format prints the session in messages as mongod does.
	Format func() string
}

// txnBSON is how mongod prints a transaction's number and retry counter
// (TxnNumberAndRetryCounter::toBSON) in its messages; a replica set's is
// always 0.
func txnBSON(n int64) string {
	return "{ txnNumber: " + strconv.FormatInt(n, 10) + ", txnRetryCounter: 0 }"
}

// CheckIn returns the session, aborting its transaction first if an
// abort came while the command ran.
func (s *Session) CheckIn() {
	s.mu.Lock()
	doomed, number, forget := s.doomed, s.doomedNumber, s.forgetAtCheckIn
	s.doomed, s.forgetAtCheckIn = false, false
	current := s.number
	s.mu.Unlock()
	if forget || doomed && number == current {
		s.abortOpen("it was killed or expired while a command ran")
	}
	if forget {
		s.forget()
	}
	s.setActive(false, s.r.cfg.Clock.Now())
	<-s.slot
}

// setActive records that a command took or returned the session.
func (s *Session) setActive(active bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !active && s.active && s.state == InProgress {
		s.activeFor += now.Sub(s.since)
	}
	s.active, s.since = active, now
}

// forget drops the session from the registry; under its checkout.
func (s *Session) forget() {
	r := s.r
	r.mu.Lock()
	if r.sessions[s.key] == s {
		delete(r.sessions, s.key)
	}
	r.mu.Unlock()
	s.forgotten = true
}

// current reads the latest number and its state.
func (s *Session) current() (int64, State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.number, s.state
}

func (s *Session) set(number int64, state State) {
	s.mu.Lock()
	s.number, s.state = number, state
	s.mu.Unlock()
}

// tooOld refuses a number older than the session's latest, as
// beginOrContinue does before anything else.
func (s *Session) tooOld(st Stmt, retryable bool) error {
	number, state := s.current()
	if st.Number >= number {
		return nil
	}
	what := "transaction"
	if state == None {
		what = "retryable write"
	}
	if retryable {
		return mongoerr.New(mongoerr.TransactionTooOld, "Retryable write with txnNumber %d is prohibited on session %s because a newer %s with txnNumber %d has already started on this session.",
			st.Number, st.Format(), what, number)
	}
	return mongoerr.New(mongoerr.TransactionTooOld, "Cannot start transaction with { txnNumber: %d } on session %s because a newer %s with txnNumberAndRetryCounter %s has already started on this session.",
		st.Number, st.Format(), what, txnBSON(number))
}

// noSuchTransaction refuses a statement whose number is not the
// session's open (or ended) transaction's.
func noSuchTransaction(st Stmt, active int64) error {
	return mongoerr.New(mongoerr.NoSuchTransaction, "Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", st.Number, active)
}

func errAborted(n int64) error {
	return mongoerr.New(mongoerr.NoSuchTransaction, "Transaction with %s has been aborted.", txnBSON(n))
}

func errCommitted(n int64) error {
	return mongoerr.New(mongoerr.TransactionCommitted, "Transaction with %s has been committed.", txnBSON(n))
}

// RetryableWrite checks a retryable write's number against the session's
// transactions: an older one is TransactionTooOld, a transaction's own
// IncompleteTransactionHistory, and a newer one aborts the open
// transaction (_beginOrContinueRetryableWrite).
func (s *Session) RetryableWrite(st Stmt) error {
	if err := s.tooOld(st, true); err != nil {
		return err
	}
	number, state := s.current()
	switch {
	case st.Number == number && state != None:
		return mongoerr.New(mongoerr.IncompleteTransactionHistory, "Cannot retry a retryable write that has been converted into a transaction")
	case st.Number > number:
		s.abortOpen("a newer retryable write started on its session")
		s.set(st.Number, None)
	}
	return nil
}

// Begin starts (st.Start) or continues the session's transaction for a
// statement and returns it.
func (s *Session) Begin(ctx context.Context, st Stmt) (*engine.Transaction, error) {
	if err := s.recall(ctx, st, st.Start); err != nil {
		return nil, err
	}
	if err := s.tooOld(st, false); err != nil {
		return nil, err
	}
	number, state := s.current()
	if st.Start {
		if st.Number == number {
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "Only servers in a sharded cluster can start a new transaction at the active transaction number")
		}
		s.abortOpen("a newer transaction started on its session")
		id := &engine.Txn{Session: st.ID, Number: st.Number, Lsid: st.Lsid}
		t, err := s.r.cfg.Engine.BeginTransaction(ctx, engine.TransactionOptions{Session: id, LockTimeout: s.r.cfg.LockTimeout(), At: st.At})
		if err != nil {
			return nil, err
		}
		now := s.r.cfg.Clock.Now()
		s.tx = t
		s.mu.Lock()
		s.number, s.state, s.started, s.expires = st.Number, InProgress, now, now.Add(s.r.cfg.Lifetime())
		s.since, s.activeFor = now, 0
		s.mu.Unlock()
		s.r.started.Add(1)
		return t, nil
	}
	if st.Number != number || state == None {
		return nil, noSuchTransaction(st, number)
	}
	switch state {
	case Aborted:
		return nil, errAborted(number)
	case Committed:
		return nil, errCommitted(number)
	}
	return s.tx, nil
}

// recall reads, once per session in this process, the newest number the
// session recorded in the store (by a committed transaction or a retryable
// write), so that after a restart a used number is not started again: the
// session then knows it as mongod's would, committed if a transaction
// committed under it. On a store shared with other servers (shared), it
// reads it again for every command that starts or ends a transaction
// (refresh), since another server may have used a newer number since:
// the store's record decides, and an open transaction of an older number
// is aborted, as a newer number aborts it on mongod.
func (s *Session) recall(ctx context.Context, st Stmt, refresh bool) error {
	if s.recalled && !(refresh && s.shared()) {
		return nil
	}
	latest, ok, err := s.r.cfg.Engine.LatestTxnNumber(ctx, st.ID)
	if err != nil {
		return err
	}
	s.recalled = true
	if number, _ := s.current(); !ok || latest <= number {
		return nil
	}
	outcome, err := s.r.cfg.Engine.TransactionOutcome(ctx, &engine.Txn{Session: st.ID, Number: latest})
	if err != nil {
		return err
	}
	s.abortOpen("another server used a newer number on its session")
	s.set(latest, stateOf(outcome))
	return nil
}

// shared reports whether the store is shared with other servers, which
// may use the session's numbers too.
func (s *Session) shared() bool { return s.r.cfg.Engine.Member() != nil }

// stateOf is the state of a number the store's records tell of.
func stateOf(o engine.TxnOutcome) State {
	switch o {
	case engine.TxnCommitted:
		return Committed
	case engine.TxnAborted:
		return Aborted
	}
	return None
}

// StatementFailed aborts the open transaction after one of its
// statements failed, as mongod does: its commit then finds no
// transaction.
func (s *Session) StatementFailed() { s.abortOpen("a statement failed") }

// known reports whether st names the session's latest transaction; if
// it does not, whether that transaction committed before (a commit
// retried after a restart), in which case it becomes the latest.
func (s *Session) known(ctx context.Context, st Stmt) (bool, error) {
	number, state := s.current()
	if st.Number == number && state != None {
		return true, nil
	}
	if st.Number < number {
		return false, noSuchTransaction(st, number)
	}
	if s.shared() {
		return s.knownShared(ctx, st, number)
	}
	ok, err := s.r.cfg.Engine.TransactionCommitted(ctx, &engine.Txn{Session: st.ID, Number: st.Number})
	if err != nil {
		return false, err
	}
	if !ok {
		return false, noSuchTransaction(st, number)
	}
	s.abortOpen("a newer transaction started on its session")
	s.set(st.Number, Committed)
	return true, nil
}

// knownShared is known for a number this server does not hold, on a
// store shared with other servers: the transaction may have committed on
// another server, whose commitTransaction the driver retries here after a
// network error, or be open there. The store's records decide
// (EndUnknownTransaction): committed, it becomes the latest, as on one
// server; otherwise it is ended in the store, so that the server holding
// it can no longer commit it, and this one answers NoSuchTransaction as
// mongod does for a number it does not know.
func (s *Session) knownShared(ctx context.Context, st Stmt, number int64) (bool, error) {
	o, newest, err := s.r.cfg.Engine.EndUnknownTransaction(ctx, &engine.Txn{Session: st.ID, Number: st.Number, Lsid: st.Lsid})
	if err != nil {
		return false, err
	}
	if newest > st.Number {
		// Another server used a newer number since recall read it.
		s.abortOpen("another server used a newer number on its session")
		s.set(newest, None)
		return false, s.tooOld(st, false)
	}
	s.abortOpen("a newer transaction started on its session")
	s.set(st.Number, stateOf(o))
	if o != engine.TxnCommitted {
		return false, noSuchTransaction(st, number)
	}
	return true, nil
}

// ending checks a commitTransaction or abortTransaction st against the
// session, as beginOrContinue does for them, and returns the number and
// state of the transaction it ends.
func (s *Session) ending(ctx context.Context, st Stmt) (int64, State, error) {
	if err := s.recall(ctx, st, true); err != nil {
		return 0, None, err
	}
	if err := s.tooOld(st, false); err != nil {
		return 0, None, err
	}
	if _, err := s.known(ctx, st); err != nil {
		return 0, None, err
	}
	number, state := s.current()
	return number, state, nil
}

// Commit commits the session's transaction st.Number. A transaction
// already committed commits again, as a retried commitTransaction must;
// one that aborted is NoSuchTransaction. A failed commit aborts it.
func (s *Session) Commit(ctx context.Context, st Stmt) error {
	number, state, err := s.ending(ctx, st)
	if err != nil {
		return err
	}
	switch state {
	case Committed:
		return nil
	case Aborted:
		return errAborted(number)
	}
	err = s.tx.Commit(ctx)
	s.tx = nil
	if err != nil {
		s.set(number, Aborted)
		s.r.aborted.Add(1)
		s.ended(number)
		return err
	}
	s.set(number, Committed)
	s.r.committed.Add(1)
	s.ended(number)
	return nil
}

// Abort aborts the session's transaction st.Number: one committed is
// TransactionCommitted, one aborted NoSuchTransaction.
func (s *Session) Abort(ctx context.Context, st Stmt) error {
	number, state, err := s.ending(ctx, st)
	if err != nil {
		return err
	}
	switch state {
	case Committed:
		return errCommitted(number)
	case Aborted:
		return errAborted(number)
	}
	s.abortOpen("abortTransaction")
	return nil
}

// abortOpen aborts the open transaction, if any; under the checkout.
func (s *Session) abortOpen(why string) {
	number, state := s.current()
	if state != InProgress {
		return
	}
	s.tx.Abort()
	s.tx = nil
	s.set(number, Aborted)
	s.r.aborted.Add(1)
	s.ended(number)
	s.r.cfg.Logger.Debug("aborted a transaction", zap.Int64("txnNumber", number), zap.String("why", why))
}

// ended tells the server that transaction number ended.
func (s *Session) ended(number int64) {
	if s.r.cfg.Ended != nil {
		s.r.cfg.Ended(s.key, number)
	}
}
