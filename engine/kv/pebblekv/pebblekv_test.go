package pebblekv

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
)

func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store {
		s, err := Open(t.TempDir(), Options{MinFreeDisk: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestSyncedCommitSurvivesCrash commits on a simulated disk, crashes it
// (keeping only what was synced) and opens the store again: every Sync
// commit is there, whole, and a commit that was never made is not.
func TestSyncedCommitSurvivesCrash(t *testing.T) {
	ctx := context.Background()
	d := NewMemDisk(1 << 30)
	s, err := Open("/db", Options{Disk: d, MinFreeDisk: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		tx, _ := s.Begin(ctx, kv.TxnOptions{})
		for j := range 10 {
			if err := tx.Set([]byte{'k', byte(i), byte(j)}, []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Commit(ctx, kv.Sync); err != nil {
			t.Fatal(err)
		}
	}
	pending, _ := s.Begin(ctx, kv.TxnOptions{})
	_ = pending.Set([]byte("never"), []byte("committed"))
	crashed := d.Crash(1)
	s2, err := Open("/db", Options{Disk: crashed, MinFreeDisk: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	it, err := s2.Iter(ctx, []byte("k"), []byte("l"), false)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	it.Close()
	if n != 500 {
		t.Fatalf("%d of the 500 keys of synced commits survived the crash", n)
	}
	if _, err := s2.Get(ctx, []byte("never")); err != kv.ErrNotFound {
		t.Fatalf("an uncommitted write after the crash: %v", err)
	}
}

// TestSizeHintReservesTheBatch writes 4 MiB in one transaction told so up
// front: its batch is allocated once, not grown from a kilobyte by
// doubling, which allocates about twice what the batch holds on top of it.
// What remains is the batch and the write set's copies, with its index:
// about 2.4 times the bytes written, against 5.3 without the hint.
func TestSizeHintReservesTheBatch(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), Options{MinFreeDisk: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writes, size = 4096, 1 << 10
	value := make([]byte, size)
	allocated := func(hint int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		tx, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true, SizeHint: hint})
		if err != nil {
			t.Fatal(err)
		}
		for i := range writes {
			if err := tx.Set(fmt.Appendf(nil, "k%06d", i), value); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		tx.Rollback()
		return after.TotalAlloc - before.TotalAlloc
	}
	written := uint64(writes * size)
	hinted, unhinted := allocated(int(written)+writes*16), allocated(0)
	t.Logf("allocated for %d KiB written: %d KiB with a size hint, %d KiB without", written>>10, hinted>>10, unhinted>>10)
	if hinted > written*3 {
		t.Fatalf("a transaction told its size allocated %d KiB for %d KiB written", hinted>>10, written>>10)
	}
}

// TestMemTableLeavesTheCacheToBlocks checks the memtable pebble is given:
// at most an eighth of the block cache, whose budget pebble charges with
// the memtables it holds (two 64 MiB ones left blocks half of the default
// 256 MiB), and at most a quarter of the free-space reserve (disk.go).
func TestMemTableLeavesTheCacheToBlocks(t *testing.T) {
	for _, tt := range []struct {
		cache, minFree, want int64
	}{
		{0, 0, 32 << 20}, // the defaults: 256 MiB of cache, 256 MiB of reserve
		{64 << 20, 0, 8 << 20},
		{1 << 30, 0, 64 << 20},
		{1 << 30, 16 << 20, 4 << 20},
		{1 << 20, 0, 1 << 20},
		{0, -1, 32 << 20},
	} {
		g := newDiskGuard(t.TempDir(), Options{MinFreeDisk: tt.minFree, Logger: zap.NewNop()})
		if got := storeOptions(g, tt.cache).MemTableSize; got != uint64(tt.want) {
			t.Errorf("cache %d, reserve %d: memtable of %d bytes, want %d", tt.cache, tt.minFree, got, tt.want)
		}
	}
}
