package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lethedb/lethe/clock"
)

// TestBallastOnRealDisk checks that a store in a directory reserves its
// ballast and that the guard reads free space there.
func TestBallastOnRealDisk(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{Clock: clock.NewManual(time.Unix(0, 0)), NoReaper: true, MinFreeDisk: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fi, err := os.Stat(filepath.Join(dir, ballastName))
	if err != nil {
		t.Fatalf("no ballast: %v", err)
	}
	if fi.Size() != 4<<20 {
		t.Fatalf("ballast of %d bytes, want half the 8 MiB reserve", fi.Size())
	}
	if avail, err := e.disk.free(); err != nil || avail <= 0 {
		t.Fatalf("free space: %d, %v", avail, err)
	}
}
