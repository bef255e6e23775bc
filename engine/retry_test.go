package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/mongoerr"
)

// A retryable write's records survive a restart, a newer transaction
// number replaces the older one's (which then is TransactionTooOld), and
// records older than the session timeout are reaped while newer ones stay.
func TestRetryRecords(t *testing.T) {
	dir := t.TempDir()
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, dir, clock, Options{})
	ctx := context.Background()
	a := &Txn{Session: [16]byte{1}, Number: 3}
	if err := e.CheckTxn(ctx, a); err != nil {
		t.Fatal(err)
	}
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
	res, err := e.Insert(context.Background(), "db", "c", []bson.Raw{doc}, true, WriteOptions{Txn: a, StmtIDs: []int32{0}})
	if err != nil || res.N != 1 {
		t.Fatalf("insert: %+v, %v", res, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openOplogEngine(t, dir, clock, Options{})
	defer e.Close()
	a = &Txn{Session: [16]byte{1}, Number: 3}
	if err := e.CheckTxn(ctx, a); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Insert(context.Background(), "db", "c", []bson.Raw{doc}, true, WriteOptions{Txn: a, StmtIDs: []int32{0}}); err != nil || res.N != 1 || len(res.Errors) != 0 {
		t.Fatalf("retried insert after a restart: %+v, %v", res, err)
	}

	// A newer number: its first write drops the records of number 3.
	a4 := &Txn{Session: [16]byte{1}, Number: 4}
	if err := e.CheckTxn(ctx, a4); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Delete(ctx, "db", "c", doc, 1, bson.RawValue{}, a4); err != nil || n != 1 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if _, ok, _ := e.Executed(ctx, a, 0); ok {
		t.Errorf("txnNumber 3's record outlived txnNumber 4's first write")
	}
	if me, ok := mongoerr.As(e.CheckTxn(ctx, &Txn{Session: [16]byte{1}, Number: 3})); !ok || me.Code != mongoerr.TransactionTooOld {
		t.Errorf("txnNumber 3 after 4: %v, want TransactionTooOld", me)
	}

	// Session 2 writes an hour later; a reap of what is older than 30
	// minutes then forgets session 1 only.
	clock.Advance(time.Hour)
	b := &Txn{Session: [16]byte{2}, Number: 1}
	if err := e.CheckTxn(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{doc}, true, WriteOptions{Txn: b, StmtIDs: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	// Before the reap, session 1's records are already gone to a write
	// that sets ExpireBefore past them; an older number is no longer
	// TransactionTooOld.
	exp := &Txn{Session: [16]byte{1}, Number: 4, ExpireBefore: clock.Now().Add(-30 * time.Minute)}
	if err := e.CheckTxn(ctx, exp); err != nil {
		t.Fatalf("expired records: %v", err)
	}
	if _, ok, _ := e.Executed(ctx, exp, 0); ok {
		t.Errorf("an expired record answered")
	}
	if err := e.CheckTxn(ctx, &Txn{Session: [16]byte{1}, Number: 2, ExpireBefore: clock.Now().Add(-30 * time.Minute)}); err != nil {
		t.Errorf("an older number after the records expired: %v", err)
	}
	cutoff := clock.Now().Add(-30 * time.Minute)
	old, err := e.ExpiredRetries(ctx, cutoff)
	if err != nil || len(old) != 1 || old[0] != [16]byte{1} {
		t.Fatalf("expired: %v, %v; want session 1", old, err)
	}
	if err := e.ForgetRetries(ctx, [][16]byte{{1}, {2}}, cutoff); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.Executed(ctx, b, 0); !ok {
		t.Errorf("session 2's record, written after the cutoff, was forgotten")
	}
	if _, ok, _ := e.Executed(ctx, a4, 0); ok {
		t.Errorf("session 1's record survived the reap")
	}
	if err := e.CheckTxn(ctx, &Txn{Session: [16]byte{1}, Number: 1}); err != nil {
		t.Errorf("a reaped session takes any number again: %v", err)
	}
	if err := e.ForgetRetries(ctx, [][16]byte{{2}, {9}}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := e.Executed(ctx, b, 0); ok {
		t.Errorf("session 2's record survived ForgetRetries")
	}
}

// TestRetryStaleStatementRecords: a newer transaction number that runs
// fewer statements leaves the older number's records of the others in
// place; they must not answer for the newer number's statements.
func TestRetryStaleStatementRecords(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	docs := func(ids ...int) []bson.Raw {
		var out []bson.Raw
		for _, id := range ids {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}})
			out = append(out, d)
		}
		return out
	}
	five := &Txn{Session: [16]byte{7}, Number: 5}
	if err := e.CheckTxn(context.Background(), five); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Insert(context.Background(), "db", "c", docs(1, 2, 3), true, WriteOptions{Txn: five, StmtIDs: []int32{0, 1, 2}}); err != nil || res.N != 3 {
		t.Fatalf("insert under 5: %+v, %v", res, err)
	}
	six := &Txn{Session: [16]byte{7}, Number: 6}
	if err := e.CheckTxn(context.Background(), six); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Insert(context.Background(), "db", "c", docs(4), true, WriteOptions{Txn: six, StmtIDs: []int32{0}}); err != nil || res.N != 1 {
		t.Fatalf("insert under 6: %+v, %v", res, err)
	}
	if _, ok, _ := e.Executed(context.Background(), six, 0); !ok {
		t.Error("statement 0 of 6 not recorded")
	}
	for stmt := int32(1); stmt <= 2; stmt++ {
		if _, ok, _ := e.Executed(context.Background(), six, stmt); ok {
			t.Errorf("statement %d of 6 answered by number 5's record", stmt)
		}
	}
	// A retry of 6 with more statements runs those it had not.
	if res, err := e.Insert(context.Background(), "db", "c", docs(4, 5), true, WriteOptions{Txn: six, StmtIDs: []int32{0, 1}}); err != nil || res.N != 2 || len(res.Errors) != 0 {
		t.Fatalf("retry of 6: %+v, %v", res, err)
	}
	if n, err := e.Count(context.Background(), "db", "c", bson.Raw{5, 0, 0, 0, 0}, 0, 0, bson.RawValue{}); err != nil || n != 5 {
		t.Fatalf("%d documents (%v), want 5", n, err)
	}
}
