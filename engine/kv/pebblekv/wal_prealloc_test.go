package pebblekv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lethedb/lethe/engine/kv"
)

// TestSmallStoreSmallWAL checks that a store holding a few megabytes takes
// about that much of the disk for its write-ahead log: pebble reserves
// 1.1 times the memtable (32 MiB here) for every WAL file at its first
// write, which walAllocFile replaces by steps of walAllocStep. The figures
// are the blocks allocated (du), not the files' sizes.
func TestSmallStoreSmallWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := storeOptions(s.disk, 0).MemTableSize; got != 32<<20 {
		t.Fatalf("memtable of %d bytes; the test expects pebble to be asked for 32 MiB", got)
	}
	ctx := context.Background()
	value := []byte(strings.Repeat("v", 1000))
	const docs = 2000 // 2 MB of values
	for i := 0; i < docs; i += 100 {
		tx, err := s.Begin(ctx, kv.TxnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for j := i; j < i+100; j++ {
			if err := tx.Set([]byte(fmt.Sprintf("k%06d", j)), value); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Commit(ctx, kv.Sync); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no WAL files in %s: %v", dir, err)
	}
	var allocated int64
	for _, name := range logs {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		allocated += fi.Sys().(*syscall.Stat_t).Blocks * 512
	}
	// Each file may hold a step reserved beyond its last write, and the
	// keys and record headers add a little to the values.
	t.Logf("%d WAL files take %d bytes of disk", len(logs), allocated)
	if limit := int64(docs*len(value))*11/10 + int64(len(logs))*walAllocStep; allocated > limit {
		t.Fatalf("%d WAL files take %d bytes of disk for %d bytes written; want at most %d", len(logs), allocated, docs*len(value), limit)
	}
}
