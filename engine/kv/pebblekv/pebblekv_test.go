package pebblekv

import (
	"context"
	"testing"

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
