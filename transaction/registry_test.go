package transaction

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func newRegistry(t *testing.T) *Registry {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), engine.Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return New(Config{Engine: eng})
}

func stmt(n int64, start bool) Stmt {
	return Stmt{Number: n, Start: start, Command: "insert", ID: [16]byte{1}, Format: func() string { return "s" }}
}

func wantCode(t *testing.T, err error, code mongoerr.Code) {
	t.Helper()
	e, ok := mongoerr.As(err)
	if !ok || e.Code != code {
		t.Fatalf("got %v, want code %d", err, code)
	}
}

// The session's checks, as mongod's TransactionParticipant makes them.
func TestStates(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	s, err := r.CheckOut(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer s.CheckIn()
	_, err = s.Begin(ctx, stmt(1, false))
	wantCode(t, err, mongoerr.NoSuchTransaction)
	if _, err := s.Begin(ctx, stmt(1, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, stmt(1, false)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Begin(ctx, stmt(1, true))
	wantCode(t, err, mongoerr.ConflictingOperationInProgress)
	_, err = s.Begin(ctx, stmt(0, true))
	wantCode(t, err, mongoerr.TransactionTooOld)
	wantCode(t, s.RetryableWrite(stmt(1, false)), mongoerr.IncompleteTransactionHistory)
	if err := s.Commit(ctx, stmt(1, false)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, stmt(1, false)); err != nil {
		t.Fatalf("commit retried: %v", err)
	}
	wantCode(t, s.Abort(ctx, stmt(1, false)), mongoerr.TransactionCommitted)
	_, err = s.Begin(ctx, stmt(1, false))
	wantCode(t, err, mongoerr.TransactionCommitted)

	if _, err := s.Begin(ctx, stmt(2, true)); err != nil {
		t.Fatal(err)
	}
	s.StatementFailed()
	wantCode(t, s.Commit(ctx, stmt(2, false)), mongoerr.NoSuchTransaction)
	wantCode(t, s.Abort(ctx, stmt(2, false)), mongoerr.NoSuchTransaction)

	// A newer retryable write aborts the open transaction.
	if _, err := s.Begin(ctx, stmt(3, true)); err != nil {
		t.Fatal(err)
	}
	if err := s.RetryableWrite(stmt(4, false)); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.TotalStarted != 3 || st.TotalCommitted != 1 || st.TotalAborted != 2 || st.CurrentOpen != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A second command on a session waits for the first; an abort of a busy
// session comes when its command checks it in.
func TestCheckOutAndKill(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	s, err := r.CheckOut(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, stmt(1, true)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := r.CheckOut(short, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second checkout did not wait: %v", err)
	}
	r.Kill(func(string) bool { return true })
	if st := r.Stats(); st.CurrentOpen != 1 || st.CurrentActive != 1 {
		t.Fatalf("a busy session's transaction was aborted under its command: %+v", st)
	}
	s.CheckIn()
	if st := r.Stats(); st.CurrentOpen != 0 || st.TotalAborted != 1 {
		t.Fatalf("the kill was not applied at check-in: %+v", st)
	}
	s, err = r.CheckOut(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Begin(ctx, stmt(1, false))
	wantCode(t, err, mongoerr.NoSuchTransaction)
	s.CheckIn()

	// Forget drops the session: a new one knows no number.
	r.Forget([]string{"k"})
	s, err = r.CheckOut(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(ctx, stmt(1, true)); err != nil {
		t.Fatalf("a forgotten session kept its number: %v", err)
	}
	s.CheckIn()
	r.Kill(func(string) bool { return true })
}

// After a restart a session's used numbers are still used: starting the
// committed transaction's number again is ConflictingOperationInProgress,
// an older one TransactionTooOld, and its commit retried is ok, as mongod
// answers from config.transactions.
func TestNumbersSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() (*engine.Engine, *Registry) {
		eng, err := engine.Open(dir, engine.Options{NoReaper: true})
		if err != nil {
			t.Fatal(err)
		}
		return eng, New(Config{Engine: eng})
	}
	eng, r := open()
	s, err := r.CheckOut(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Begin(ctx, stmt(5, true))
	if err != nil {
		t.Fatal(err)
	}
	// A transaction that writes records its commit (a read-only one
	// writes nothing, as mongod's writes no config.transactions entry).
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
	if _, err := eng.Insert(engine.WithTransaction(ctx, tx), "db", "c", []bson.Raw{doc}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, stmt(5, false)); err != nil {
		t.Fatal(err)
	}
	s.CheckIn()
	eng.Close()

	eng, r = open()
	defer eng.Close()
	s, err = r.CheckOut(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer s.CheckIn()
	_, err = s.Begin(ctx, stmt(5, true))
	wantCode(t, err, mongoerr.ConflictingOperationInProgress)
	_, err = s.Begin(ctx, stmt(4, true))
	wantCode(t, err, mongoerr.TransactionTooOld)
	if err := s.Commit(ctx, stmt(5, false)); err != nil {
		t.Fatalf("a retried commit after a restart: %v", err)
	}
	if _, err := s.Begin(ctx, stmt(6, true)); err != nil {
		t.Fatal(err)
	}
}
