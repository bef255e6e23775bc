package kvtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv"
)

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
