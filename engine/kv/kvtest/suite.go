// Package kvtest is the conformance suite of package kv: one set of tests
// that every kv.Store implementation runs (Run), and a contract wrapper
// (Contract) that checks the arguments and error kinds of every call, for
// the engine's own tests to run through.
package kvtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv"
)

// Opener opens a fresh, empty store for one test. The store is closed by
// the test.
type Opener func(t *testing.T) kv.Store

// Run runs the conformance suite against the stores open makes, each
// wrapped in Contract.
func Run(t *testing.T, open Opener) {
	wrapped := func(t *testing.T) kv.Store {
		s := Contract(open(t))
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
		return s
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s kv.Store)
	}{
		{"CommitAndGet", testCommitAndGet},
		{"Rollback", testRollback},
		{"ReadYourWrites", testReadYourWrites},
		{"IteratorBoundsAndOrder", testIteratorBoundsAndOrder},
		{"SnapshotIsolation", testSnapshotIsolation},
		{"ViewIsolation", testViewIsolation},
		{"ConcurrentViewReads", testConcurrentViewReads},
		{"WriteWriteConflict", testWriteWriteConflict},
		{"ConflictWithLock", testConflictWithLock},
		{"LockWaitAndBound", testLockWaitAndBound},
		{"CurrentReadAfterLock", testCurrentReadAfterLock},
		{"ConcurrentOptimisticCounters", testConcurrentOptimisticCounters},
		{"ConcurrentPessimisticCounters", testConcurrentPessimisticCounters},
		{"AtomicVisibility", testAtomicVisibility},
		{"SnapshotTxnReads", testSnapshotTxnReads},
		{"SnapshotTxnLockConflict", testSnapshotTxnLockConflict},
		{"SnapshotTxnNoFalseConflicts", testSnapshotTxnNoFalseConflicts},
		{"SnapshotTxnAfterNow", testSnapshotTxnAfterNow},
		{"ExactKeyLocks", testExactKeyLocks},
		{"ManyLocks", testManyLocks},
		{"ConcurrentSnapshotTxnTransfers", testConcurrentSnapshotTxnTransfers},
		{"DropRange", testDropRange},
		{"Timestamps", testTimestamps},
		{"DoneTxn", testDoneTxn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, wrapped(t)) })
	}
}

var ctx = context.Background()

func k(s string) []byte { return []byte(s) }

func commit(t *testing.T, s kv.Store, pairs ...string) kv.Timestamp {
	t.Helper()
	tx := begin(t, s, false)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "<del>" {
			must(t, tx.Delete(k(pairs[i])))
		} else {
			must(t, tx.Set(k(pairs[i]), k(pairs[i+1])))
		}
	}
	ts, err := tx.Commit(ctx, kv.Sync)
	must(t, err)
	return ts
}

func begin(t *testing.T, s kv.Store, pessimistic bool) kv.Txn {
	t.Helper()
	tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: pessimistic, LockWait: 200 * time.Millisecond})
	must(t, err)
	return tx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantValue(t *testing.T, r kv.Reader, key, want string) {
	t.Helper()
	v, err := r.Get(ctx, k(key))
	if want == "" {
		if !errors.Is(err, kv.ErrNotFound) {
			t.Fatalf("Get(%q) = %q, %v; want ErrNotFound", key, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", key, v, err, want)
	}
}

// scan lists "key=value" of [lo, hi) in the iterator's order.
func scan(t *testing.T, r kv.Reader, lo, hi string, reverse bool) []string {
	t.Helper()
	var hiB []byte
	if hi != "" {
		hiB = k(hi)
	}
	it, err := r.Iter(ctx, k(lo), hiB, reverse)
	must(t, err)
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	must(t, it.Error())
	return out
}

func wantScan(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan = %v, want %v", got, want)
	}
}

func testCommitAndGet(t *testing.T, s kv.Store) {
	wantValue(t, s, "a", "")
	commit(t, s, "a", "1", "b", "2")
	wantValue(t, s, "a", "1")
	wantValue(t, s, "b", "2")
	commit(t, s, "a", "<del>", "b", "3")
	wantValue(t, s, "a", "")
	wantValue(t, s, "b", "3")
	// An empty value is a value, not a deletion.
	commit(t, s, "e", "")
	if v, err := s.Get(ctx, k("e")); err != nil || len(v) != 0 {
		t.Fatalf("Get of an empty value = %q, %v", v, err)
	}
	// Get's value is the caller's: changing it changes nothing stored.
	v, err := s.Get(ctx, k("b"))
	must(t, err)
	v[0] = 'x'
	wantValue(t, s, "b", "3")
}

func testRollback(t *testing.T, s kv.Store) {
	tx := begin(t, s, true)
	must(t, tx.LockKeys(ctx, kv.LockOptions{}, k("a")))
	must(t, tx.Set(k("a"), k("1")))
	tx.Rollback()
	wantValue(t, s, "a", "")
	// The lock went with it.
	tx2 := begin(t, s, true)
	defer tx2.Rollback()
	must(t, tx2.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("a")))
}

func testReadYourWrites(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1", "c", "3", "e", "5")
	for _, pessimistic := range []bool{false, true} {
		tx := begin(t, s, pessimistic)
		must(t, tx.Set(k("b"), k("2")))
		must(t, tx.Set(k("c"), k("33")))
		must(t, tx.Delete(k("e")))
		must(t, tx.Set(k("f"), k("6")))
		wantValue(t, tx, "b", "2")
		wantValue(t, tx, "c", "33")
		wantValue(t, tx, "e", "")
		wantValue(t, s, "b", "") // private until commit
		if v, ok := tx.Buffered(k("e")); !ok || v != nil {
			t.Fatalf("Buffered(e) = %q, %v; want a pending delete", v, ok)
		}
		if _, ok := tx.Buffered(k("a")); ok {
			t.Fatal("Buffered(a) reports a write the transaction did not make")
		}
		wantScan(t, scan(t, tx, "a", "", false), "a=1", "b=2", "c=33", "f=6")
		wantScan(t, scan(t, tx, "a", "", true), "f=6", "c=33", "b=2", "a=1")
		wantScan(t, scan(t, tx, "b", "f", false), "b=2", "c=33")
		// A key the caller changes after Set is not changed in the
		// transaction.
		key, val := k("g"), k("7")
		must(t, tx.Set(key, val))
		key[0], val[0] = 'z', '9'
		wantValue(t, tx, "g", "7")
		tx.Rollback()
	}
}

func testIteratorBoundsAndOrder(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1", "b", "2", "b\x00", "3", "c", "4", "d", "5")
	wantScan(t, scan(t, s, "b", "d", false), "b=2", "b\x00=3", "c=4")
	wantScan(t, scan(t, s, "b", "d", true), "c=4", "b\x00=3", "b=2")
	wantScan(t, scan(t, s, "", "", false), "a=1", "b=2", "b\x00=3", "c=4", "d=5")
	wantScan(t, scan(t, s, "x", "", false))
	it, err := s.Iter(ctx, k("a"), nil, false)
	must(t, err)
	defer it.Close()
	if !it.SeekGE(k("bb")) || string(it.Key()) != "c" {
		t.Fatalf("SeekGE(bb) at %q, want c", it.Key())
	}
	if !it.Next() || string(it.Key()) != "d" || it.Next() {
		t.Fatal("Next after SeekGE does not walk on to the end")
	}
}

func testSnapshotIsolation(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1", "b", "1")
	tx := begin(t, s, false)
	defer tx.Rollback()
	snap, err := s.Snapshot(ctx)
	must(t, err)
	defer snap.Close()
	wantValue(t, tx, "a", "1")
	commit(t, s, "a", "2", "c", "2")
	wantValue(t, tx, "a", "1")
	wantValue(t, tx, "c", "")
	wantScan(t, scan(t, tx, "a", "", false), "a=1", "b=1")
	wantValue(t, snap, "a", "1")
	wantScan(t, scan(t, snap, "a", "", false), "a=1", "b=1")
	wantValue(t, s, "a", "2")
}

// testViewIsolation: a view (kv.View) holds its state as a snapshot does,
// through Get and through iterators opened before and after a commit.
func testViewIsolation(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1", "b", "1", "d", "1")
	view, err := kv.View(ctx, s)
	must(t, err)
	before := view.TS()
	early, err := view.Iter(ctx, k("a"), nil, false)
	must(t, err)
	commit(t, s, "a", "2", "c", "2", "d", "2")
	wantValue(t, view, "a", "1")
	wantValue(t, view, "c", "")
	wantValue(t, view, "d", "1")
	wantValue(t, view, "aa", "") // no key of which another is a prefix
	wantScan(t, scan(t, view, "a", "", false), "a=1", "b=1", "d=1")
	wantScan(t, scan(t, view, "a", "d", true), "b=1", "a=1")
	if view.TS() != before {
		t.Fatalf("the view's timestamp moved from %v to %v", before, view.TS())
	}
	var got []string
	for ok := early.First(); ok; ok = early.Next() {
		got = append(got, string(early.Key())+"="+string(early.Value()))
	}
	must(t, early.Error())
	must(t, early.Close())
	must(t, view.Close())
	wantScan(t, got, "a=1", "b=1", "d=1")
	wantValue(t, s, "a", "2")
}

// testConcurrentViewReads: a view is safe for concurrent use, and every
// reader of one view sees the same state while writers commit.
func testConcurrentViewReads(t *testing.T, s kv.Store) {
	commit(t, s, "x", "50", "y", "50")
	view, err := kv.View(ctx, s)
	must(t, err)
	defer view.Close()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				x, err1 := view.Get(ctx, k("x"))
				it, err2 := view.Iter(ctx, k("y"), k("z"), false)
				if err1 != nil || err2 != nil {
					t.Errorf("view reads: %v, %v", err1, err2)
					return
				}
				ok := it.First()
				y := string(it.Value())
				it.Close()
				if string(x) != "50" || !ok || y != "50" {
					t.Errorf("a view saw x=%s y=%s after later commits", x, y)
					return
				}
			}
		}()
	}
	for range 50 {
		must(t, move(s, k("x"), k("y")))
	}
	wg.Wait()
}

func testDropRange(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1", "b1", "2", "b2", "3", "c", "4")
	must(t, s.DropRange(ctx, k("b"), k("c")))
	wantScan(t, scan(t, s, "", "", false), "a=1", "c=4")
	n, err := s.ApproximateSize(ctx, k("a"), k("d"))
	if err != nil || n < 0 {
		t.Fatalf("ApproximateSize = %d, %v", n, err)
	}
}

func testTimestamps(t *testing.T, s kv.Store) {
	t1 := commit(t, s, "a", "1")
	t2 := commit(t, s, "a", "2")
	if t2 <= t1 {
		t.Fatalf("commit timestamps %d then %d do not grow", t1, t2)
	}
	now, err := s.Now(ctx)
	must(t, err)
	if now < t2 {
		t.Fatalf("Now() = %d, older than the commit at %d", now, t2)
	}
	tx := begin(t, s, false)
	defer tx.Rollback()
	if tx.StartTS() < t2 {
		t.Fatalf("a transaction begun after the commit at %d starts at %d", t2, tx.StartTS())
	}
}

func testDoneTxn(t *testing.T, s kv.Store) {
	tx := begin(t, s, false)
	must(t, tx.Set(k("a"), k("1")))
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	tx.Rollback() // a no-op after Commit
	if err := tx.Set(k("a"), k("2")); !errors.Is(err, kv.ErrTxnDone) {
		t.Fatalf("Set after Commit: %v, want ErrTxnDone", err)
	}
	if _, err := tx.Commit(ctx, kv.Sync); !errors.Is(err, kv.ErrTxnDone) {
		t.Fatalf("Commit after Commit: %v, want ErrTxnDone", err)
	}
	wantValue(t, s, "a", "1")
}
