package pebblekv

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBallastOnRealDisk checks that a store in a directory reserves its
// ballast and that the guard reads free space there.
func TestBallastOnRealDisk(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{MinFreeDisk: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(filepath.Join(dir, ballastName))
	if err != nil {
		t.Fatalf("no ballast: %v", err)
	}
	if fi.Size() != 4<<20 {
		t.Fatalf("ballast of %d bytes, want half the 8 MiB reserve", fi.Size())
	}
	if avail, err := s.disk.free(); err != nil || avail <= 0 {
		t.Fatalf("free space: %d, %v", avail, err)
	}
}

// TestFreeReadingReused checks that on a real disk a commit reuses the
// last reading of the free space, less what the commits since added, while
// it is recent and far above the reserve, and reads it again otherwise.
func TestFreeReadingReused(t *testing.T) {
	s, err := Open(t.TempDir(), Options{MinFreeDisk: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := s.disk
	first, err := g.freeForCommit(100)
	if err != nil {
		t.Fatal(err)
	}
	if first < g.minFree+freeReuseMargin {
		t.Skipf("%d bytes free: too few to reuse a reading", first)
	}
	g.reading.Store(&freeReading{avail: first, at: time.Now()})
	g.sinceReading.Store(0)
	if got, _ := g.freeForCommit(1000); got != first-1000 {
		t.Fatalf("a commit right after a reading of %d bytes free saw %d, want the reading less its 1000 bytes", first, got)
	}
	// Near the reserve, every commit reads the disk.
	g.reading.Store(&freeReading{avail: g.minFree + freeReuseMargin, at: time.Now()})
	g.sinceReading.Store(0)
	if got, _ := g.freeForCommit(1); got == g.minFree+freeReuseMargin-1 {
		t.Fatal("a reading at the margin served a commit")
	}
	// An old reading is read again.
	g.reading.Store(&freeReading{avail: 1 << 62, at: time.Now().Add(-freeReuseFor)})
	if got, _ := g.freeForCommit(1); got > 1<<61 {
		t.Fatal("a reading older than freeReuseFor served a commit")
	}
}
