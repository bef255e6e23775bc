// Package kvtest is the conformance suite of package kv: one set of tests
// that every kv.Store implementation runs (Run), and a contract wrapper
// (Contract) that checks the arguments and error kinds of every call, for
// the engine's own tests to run through.
package kvtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

func testWriteWriteConflict(t *testing.T, s kv.Store) {
	commit(t, s, "a", "0")
	t1, t2 := begin(t, s, false), begin(t, s, false)
	must(t, t1.Set(k("a"), k("1")))
	must(t, t2.Set(k("a"), k("2")))
	must(t, t2.Set(k("other"), k("2")))
	if _, err := t1.Commit(ctx, kv.Sync); err != nil {
		t.Fatalf("first committer: %v", err)
	}
	if _, err := t2.Commit(ctx, kv.Sync); !kv.IsConflict(err) {
		t.Fatalf("second committer: %v, want a conflict", err)
	}
	wantValue(t, s, "a", "1")
	wantValue(t, s, "other", "") // nothing of the loser is stored
	// Disjoint writers both commit.
	t3, t4 := begin(t, s, false), begin(t, s, false)
	must(t, t3.Set(k("x"), k("3")))
	must(t, t4.Set(k("y"), k("4")))
	_, err3 := t3.Commit(ctx, kv.Sync)
	_, err4 := t4.Commit(ctx, kv.Sync)
	if err3 != nil || err4 != nil {
		t.Fatalf("disjoint commits: %v, %v", err3, err4)
	}
}

func testConflictWithLock(t *testing.T, s kv.Store) {
	p := begin(t, s, true)
	must(t, p.LockKeys(ctx, kv.LockOptions{}, k("a")))
	o := begin(t, s, false)
	must(t, o.Set(k("a"), k("o")))
	if _, err := o.Commit(ctx, kv.Sync); !kv.IsConflict(err) {
		t.Fatalf("optimistic commit of a key locked by another: %v, want a conflict", err)
	}
	must(t, p.Set(k("a"), k("p")))
	if _, err := p.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	wantValue(t, s, "a", "p")
}

func testLockWaitAndBound(t *testing.T, s kv.Store) {
	p1 := begin(t, s, true)
	must(t, p1.LockKeys(ctx, kv.LockOptions{}, k("a")))
	p2 := begin(t, s, true)
	defer p2.Rollback()
	if err := p2.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("a")); !errors.Is(err, kv.ErrLocked) || !kv.IsConflict(err) {
		t.Fatalf("NoWait on a held key: %v, want ErrLocked", err)
	}
	start := time.Now()
	if err := p2.LockKeys(ctx, kv.LockOptions{}, k("a")); !kv.IsConflict(err) {
		t.Fatalf("a wait past the bound: %v, want a conflict", err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("waited %v for a lock bounded at 200ms", waited)
	}
	// A context that ends ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	p3 := begin(t, s, true)
	defer p3.Rollback()
	if err := p3.LockKeys(cctx, kv.LockOptions{}, k("a")); err == nil {
		t.Fatal("a lock wait outlived its context")
	}
	// A waiter gets the lock once the holder commits.
	got := make(chan error, 1)
	p4 := begin(t, s, true)
	defer p4.Rollback()
	go func() { got <- p4.LockKeys(ctx, kv.LockOptions{}, k("a")) }()
	time.Sleep(20 * time.Millisecond)
	must(t, p1.Set(k("a"), k("1")))
	if _, err := p1.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter after the holder committed: %v", err)
	}
	if !p4.Locked(k("a")) {
		t.Fatal("Locked(a) is false after LockKeys")
	}
}

// testManyLocks checks Locked on a transaction that holds many keys, as a
// TTL purge or a multi-document write does: past the few a store may scan
// rather than index, and asked about them now and then while it takes more.
func testManyLocks(t *testing.T, s kv.Store) {
	other := begin(t, s, true)
	defer other.Rollback()
	must(t, other.LockKeys(ctx, kv.LockOptions{}, k("busy")))
	p := begin(t, s, true)
	defer p.Rollback()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	const n = 60
	for i := range n {
		must(t, p.LockKeys(ctx, kv.LockOptions{NoWait: true}, key(i)))
		if i%20 == 19 {
			for j := range n {
				if got := p.Locked(key(j)); got != (j <= i) {
					t.Fatalf("after locking k000..%s: Locked(%s) = %v", key(i), key(j), got)
				}
			}
		}
		if i == 30 {
			// A key another transaction holds is refused, and the
			// refusal takes nothing from what this one holds.
			if err := p.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("busy")); !errors.Is(err, kv.ErrLocked) {
				t.Fatalf("NoWait on a key another holds: %v, want ErrLocked", err)
			}
			if p.Locked(k("busy")) || !p.Locked(key(0)) || !p.Locked(key(30)) {
				t.Fatal("a refused lock changed what the transaction holds")
			}
		}
	}
	if p.Locked(k("k")) || p.Locked(k("k0000")) || p.Locked(key(n)) {
		t.Fatal("Locked is true for a key never locked")
	}
	p.Rollback()
	q := begin(t, s, true)
	defer q.Rollback()
	for i := range n {
		if err := q.LockKeys(ctx, kv.LockOptions{NoWait: true}, key(i)); err != nil {
			t.Fatalf("%s after the holder rolled back: %v", key(i), err)
		}
	}
}

func testCurrentReadAfterLock(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1")
	p := begin(t, s, true)
	defer p.Rollback()
	commit(t, s, "a", "2")
	must(t, p.LockKeys(ctx, kv.LockOptions{}, k("a")))
	wantValue(t, p, "a", "2")
	must(t, p.Set(k("a"), k("3")))
	if _, err := p.Commit(ctx, kv.Sync); err != nil {
		t.Fatalf("a pessimistic commit of a key it locked: %v", err)
	}
	wantValue(t, s, "a", "3")
}

// counter runs n increments of key in goroutines, each in its own
// transaction retried on conflict, and checks none is lost.
func counter(t *testing.T, s kv.Store, pessimistic bool) {
	const workers, each = 8, 25
	key := k("n")
	commit(t, s, "n", "0")
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					err := increment(s, key, pessimistic)
					if err == nil {
						break
					}
					if !kv.IsConflict(err) {
						t.Error(err)
						return
					}
					conflicts.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	v, err := s.Get(ctx, key)
	must(t, err)
	if n := atoi(v); n != workers*each {
		t.Fatalf("counter = %d after %d increments (%d conflicts retried)", n, workers*each, conflicts.Load())
	}
}

func increment(s kv.Store, key []byte, pessimistic bool) error {
	tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: pessimistic})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if pessimistic {
		if err := tx.LockKeys(ctx, kv.LockOptions{}, key); err != nil {
			return err
		}
	}
	v, err := tx.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := tx.Set(key, []byte(fmt.Sprint(atoi(v)+1))); err != nil {
		return err
	}
	_, err = tx.Commit(ctx, kv.Sync)
	return err
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}

func testConcurrentOptimisticCounters(t *testing.T, s kv.Store)  { counter(t, s, false) }
func testConcurrentPessimisticCounters(t *testing.T, s kv.Store) { counter(t, s, true) }

// testAtomicVisibility moves a unit between two keys in transactions while
// readers check, in snapshots, that the sum never changes.
func testAtomicVisibility(t *testing.T, s kv.Store) {
	commit(t, s, "x", "50", "y", "50")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap, err := s.Snapshot(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				x, err1 := snap.Get(ctx, k("x"))
				y, err2 := snap.Get(ctx, k("y"))
				snap.Close()
				if err1 != nil || err2 != nil || atoi(x)+atoi(y) != 100 {
					t.Errorf("a snapshot saw x=%s y=%s (%v, %v): half a commit", x, y, err1, err2)
					return
				}
			}
		}()
	}
	for i := range 100 {
		from, to := k("x"), k("y")
		if i%2 == 1 {
			from, to = to, from
		}
		for {
			err := move(s, from, to)
			if err == nil {
				break
			}
			if !kv.IsConflict(err) {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

func move(s kv.Store, from, to []byte) error {
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	a, err := tx.Get(ctx, from)
	if err != nil {
		return err
	}
	b, err := tx.Get(ctx, to)
	if err != nil {
		return err
	}
	if err := tx.Set(from, []byte(fmt.Sprint(atoi(a)-1))); err != nil {
		return err
	}
	if err := tx.Set(to, []byte(fmt.Sprint(atoi(b)+1))); err != nil {
		return err
	}
	_, err = tx.Commit(ctx, kv.NoSync)
	return err
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

func beginSnapshotTxn(t *testing.T, s kv.Store) kv.Txn {
	t.Helper()
	tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true, SnapshotReads: true, LockWait: 200 * time.Millisecond})
	must(t, err)
	return tx
}

// testSnapshotTxnReads: a snapshot transaction reads its start, its own
// writes over it, and what it locked stays as its snapshot had it.
func testSnapshotTxnReads(t *testing.T, s kv.Store) {
	commit(t, s, "a", "1", "b", "1")
	tx := beginSnapshotTxn(t, s)
	defer tx.Rollback()
	commit(t, s, "a", "2", "c", "2")
	wantValue(t, tx, "a", "1")
	wantValue(t, tx, "c", "")
	must(t, tx.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("b")))
	must(t, tx.Set(k("b"), k("t")))
	wantScan(t, scan(t, tx, "a", "d", false), "a=1", "b=t")
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	wantScan(t, scan(t, s, "a", "d", false), "a=2", "b=t", "c=2")
}

// testSnapshotTxnLockConflict: locking a key committed after the start is
// a conflict at once, whether the other writer was a plain commit or
// another snapshot transaction; a key committed before the start is not.
func testSnapshotTxnLockConflict(t *testing.T, s kv.Store) {
	commit(t, s, "a", "0", "b", "0")
	t1 := beginSnapshotTxn(t, s)
	defer t1.Rollback()
	must(t, t1.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("b")))
	commit(t, s, "a", "1")
	if err := t1.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("a")); !kv.IsConflict(err) {
		t.Fatalf("locking a key committed after the start: %v, want a conflict", err)
	}
	t1.Rollback()

	t2, t3 := beginSnapshotTxn(t, s), beginSnapshotTxn(t, s)
	defer t2.Rollback()
	defer t3.Rollback()
	must(t, t2.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("a")))
	if err := t3.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("a")); !errors.Is(err, kv.ErrLocked) {
		t.Fatalf("locking a key another open transaction holds: %v, want ErrLocked", err)
	}
	must(t, t2.Set(k("a"), k("2")))
	if _, err := t2.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	if err := t3.LockKeys(ctx, kv.LockOptions{NoWait: true}, k("a")); !kv.IsConflict(err) {
		t.Fatalf("locking a key the first committer wrote: %v, want a conflict", err)
	}
	wantValue(t, s, "a", "2")
}

// testSnapshotTxnNoFalseConflicts: many commits of other keys during a
// snapshot transaction never make a conflict on the keys it locks.
func testSnapshotTxnNoFalseConflicts(t *testing.T, s kv.Store) {
	tx := beginSnapshotTxn(t, s)
	defer tx.Rollback()
	for i := range 200 {
		pairs := make([]string, 0, 100)
		for j := range 50 {
			pairs = append(pairs, fmt.Sprintf("other/%d/%d", i, j), "v")
		}
		commit(t, s, pairs...)
	}
	for i := range 1000 {
		key := k(fmt.Sprintf("mine/%d", i))
		if err := tx.LockKeys(ctx, kv.LockOptions{NoWait: true}, key); err != nil {
			t.Fatalf("lock %s after 10,000 commits of other keys: %v", key, err)
		}
		must(t, tx.Set(key, k("t")))
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
}

// testExactKeyLocks: transactions that lock different keys never wait for
// each other, however many keys each holds.
func testExactKeyLocks(t *testing.T, s kv.Store) {
	holder := begin(t, s, true)
	defer holder.Rollback()
	for i := range 5000 {
		must(t, holder.LockKeys(ctx, kv.LockOptions{NoWait: true}, k(fmt.Sprintf("held/%d", i))))
	}
	for i := range 5000 {
		p := begin(t, s, true)
		if err := p.LockKeys(ctx, kv.LockOptions{NoWait: true}, k(fmt.Sprintf("free/%d", i))); err != nil {
			t.Fatalf("lock of a free key while another transaction holds 5,000 others: %v", err)
		}
		p.Rollback()
	}
}

// testConcurrentSnapshotTxnTransfers moves units between accounts in
// snapshot transactions, retried on conflict, while plain pessimistic
// writers touch the same accounts and snapshots check the sum.
func testConcurrentSnapshotTxnTransfers(t *testing.T, s kv.Store) {
	const accounts = 5
	pairs := make([]string, 0, 2*accounts)
	for i := range accounts {
		pairs = append(pairs, fmt.Sprintf("acct/%d", i), "100")
	}
	commit(t, s, pairs...)
	var wg sync.WaitGroup
	transfer := func(from, to int) error {
		tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true, SnapshotReads: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		a, b := k(fmt.Sprintf("acct/%d", from)), k(fmt.Sprintf("acct/%d", to))
		for _, key := range [][]byte{a, b} {
			if err := tx.LockKeys(ctx, kv.LockOptions{NoWait: true}, key); err != nil {
				return err
			}
		}
		va, err := tx.Get(ctx, a)
		if err != nil {
			return err
		}
		vb, err := tx.Get(ctx, b)
		if err != nil {
			return err
		}
		must(t, tx.Set(a, []byte(fmt.Sprint(atoi(va)-1))))
		must(t, tx.Set(b, []byte(fmt.Sprint(atoi(vb)+1))))
		_, err = tx.Commit(ctx, kv.NoSync)
		return err
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				from, to := (w+i)%accounts, (w+2*i+1)%accounts
				if from == to {
					continue
				}
				for {
					err := transfer(from, to)
					if err == nil {
						break
					}
					if !kv.IsConflict(err) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	// A plain writer rewrites each account with its own value.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 100 {
			key := k(fmt.Sprintf("acct/%d", i%accounts))
			tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
			if err != nil {
				t.Error(err)
				return
			}
			if err := tx.LockKeys(ctx, kv.LockOptions{}, key); err == nil {
				v, err := tx.Get(ctx, key)
				if err == nil {
					err = tx.Set(key, v)
				}
				if err == nil {
					_, err = tx.Commit(ctx, kv.NoSync)
				}
				if err != nil && !kv.IsConflict(err) {
					t.Error(err)
				}
			}
			tx.Rollback()
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		snap, err := s.Snapshot(ctx)
		must(t, err)
		sum := 0
		for _, kv := range scan(t, snap, "acct/", "acct0", false) {
			_, v, _ := strings.Cut(kv, "=")
			sum += atoi([]byte(v))
		}
		snap.Close()
		if sum != 100*accounts {
			t.Errorf("a snapshot saw the sum %d, want %d", sum, 100*accounts)
			<-done
			return
		}
		select {
		case <-done:
			return
		default:
		}
	}
}

// testSnapshotTxnAfterNow: a snapshot transaction begun after Now, with no
// commit since, starts at once.
func testSnapshotTxnAfterNow(t *testing.T, s kv.Store) {
	for range 3 {
		if _, err := s.Now(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tx, err := s.Begin(cctx, kv.TxnOptions{Pessimistic: true, SnapshotReads: true})
	if err != nil {
		t.Fatalf("Begin after Now with no commit since: %v", err)
	}
	tx.Rollback()
}
