package engine

import (
	"context"
	"testing"

	"github.com/lethedb/lethe/engine/kv"
)

// rawWrite commits one write straight to the engine's store, behind the
// engine's back: tests use it to corrupt or plant keys.
func rawWrite(t testing.TB, e *Engine, f func(tx kv.Txn) error) {
	t.Helper()
	ctx := context.Background()
	tx, err := e.store.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
}

func rawSet(t testing.TB, e *Engine, k, v []byte) {
	t.Helper()
	rawWrite(t, e, func(tx kv.Txn) error { return tx.Set(k, v) })
}

func rawDelete(t testing.TB, e *Engine, k []byte) {
	t.Helper()
	rawWrite(t, e, func(tx kv.Txn) error { return tx.Delete(k) })
}

// rawIter walks [lo, hi) of the engine's store.
func rawIter(e *Engine, lo, hi []byte) (kv.Iterator, error) {
	return e.store.Iter(context.Background(), lo, hi, false)
}
