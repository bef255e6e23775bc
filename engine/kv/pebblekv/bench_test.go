package pebblekv

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethedb/lethe/engine/kv"
)

// BenchmarkPebbleSyncParallel is the ceiling: one synced Set per pebble
// commit, with no transaction around it.
func BenchmarkPebbleSyncParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{MinFreeDisk: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var next atomic.Uint64
	val := make([]byte, 200)
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := binary.BigEndian.AppendUint64([]byte("k"), next.Add(1))
			if err := s.db.Set(k, val, pebble.Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTxnSyncParallel is the same write through a pessimistic
// transaction with one lock: what the store adds to the ceiling.
func BenchmarkTxnSyncParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{MinFreeDisk: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var next atomic.Uint64
	val := make([]byte, 200)
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := binary.BigEndian.AppendUint64([]byte("k"), next.Add(1))
			tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
			if err == nil {
				err = tx.LockKeys(ctx, kv.LockOptions{}, k)
			}
			if err == nil {
				err = tx.Set(k, val)
			}
			if err == nil {
				_, err = tx.Commit(ctx, kv.Sync)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
