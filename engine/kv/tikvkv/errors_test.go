package tikvkv

import (
	"context"
	"testing"

	"github.com/lethedb/lethe/engine/kv"
)

// TestLockLostIsConflict: a pessimistic transaction whose lock another
// took down (as a pessimistic prewrite that meets a lock in its way
// resolves it) fails its commit as a conflict, which the engine may run
// again, and commits nothing.
func TestLockLostIsConflict(t *testing.T) {
	ctx := context.Background()
	s, err := OpenMock(testOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := []byte("b/lost")
	tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tx.LockKeys(ctx, kv.LockOptions{}, key); err != nil {
		t.Fatal(err)
	}
	if err := tx.Set(key, []byte("v")); err != nil {
		t.Fatal(err)
	}
	// The lock goes, as a resolver's rollback of it would take it; the
	// transaction still counts on it.
	in := tx.(*txn)
	if failed := in.pessimisticRollback(ctx, [][]byte{s.k.in(key)}); len(failed) > 0 {
		t.Fatal("the lock could not be taken down")
	}
	_, err = tx.Commit(ctx, kv.Sync)
	if !kv.IsConflict(err) {
		t.Fatalf("commit after the lock was lost: %v, want a conflict", err)
	}
	if _, err := s.Get(ctx, key); err != kv.ErrNotFound {
		t.Fatalf("the key after the failed commit: %v, want none", err)
	}
}
