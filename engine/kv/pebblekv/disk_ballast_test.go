package pebblekv

import (
	"os"
	"path/filepath"
	"testing"
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
