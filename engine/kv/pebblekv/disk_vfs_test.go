package pebblekv

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// TestLogWriteWaitsForSpace checks that a WAL write on a full disk waits
// for space to come back instead of failing, and that a table write fails
// at once.
func TestLogWriteWaitsForSpace(t *testing.T) {
	d := NewMemDisk(1 << 10)
	fs := logRetryFS{FS: d.fs(), log: zap.NewNop()}
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	table, err := fs.Create("/db/000005.sst", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Write(make([]byte, 4<<10)); !vfs.IsNoSpaceError(err) {
		t.Fatalf("table write past the capacity: %v, want ENOSPC", err)
	}
	wal, err := fs.Create("/db/000004.log", vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		d.SetCapacity(1 << 20)
	}()
	start := time.Now()
	if n, err := wal.Write(make([]byte, 4<<10)); err != nil || n != 4<<10 {
		t.Fatalf("log write: %d, %v", n, err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("the log write succeeded after %v, before space was freed", waited)
	}
}
