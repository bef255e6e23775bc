package kvtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv"
)

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
