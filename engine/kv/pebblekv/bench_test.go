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

// BenchmarkIndexedReadParallel is what an index scan's batch costs the
// store: open a consistent view, read one short range of entries and the
// documents they name, close it; over 200,000 keys flushed to sstables,
// through a pebble snapshot and through a view (kv.Viewer).
func BenchmarkIndexedReadParallel(b *testing.B) {
	s, err := Open(b.TempDir(), Options{MinFreeDisk: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const docs = 200_000
	val := make([]byte, 1000)
	for i := 0; i < docs; i += 1000 {
		batch := s.db.NewBatch()
		for j := i; j < i+1000; j++ {
			_ = batch.Set(binary.BigEndian.AppendUint64([]byte("d"), uint64(j)), val, nil)
			_ = batch.Set(binary.BigEndian.AppendUint64([]byte("i"), uint64(j)), nil, nil)
		}
		if err := batch.Commit(pebble.NoSync); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, open := range []struct {
		name string
		fn   func(context.Context) (kv.Snapshot, error)
	}{{"snapshot", s.Snapshot}, {"view", s.View}} {
		b.Run(open.name, func(b *testing.B) {
			var next atomic.Uint64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := next.Add(7919) % (docs - 4)
					snap, err := open.fn(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					lo := binary.BigEndian.AppendUint64([]byte("i"), n)
					hi := binary.BigEndian.AppendUint64([]byte("i"), n+4)
					it, err := snap.Iter(ctx, lo, hi, false)
					if err != nil {
						b.Error(err)
						return
					}
					for ok := it.First(); ok; ok = it.Next() {
						if _, err := snap.Get(ctx, append([]byte("d"), it.Key()[1:]...)); err != nil {
							b.Error(err)
						}
					}
					it.Close()
					snap.Close()
				}
			})
		})
	}
}
