//go:build unix

package server

import (
	"syscall"
	"testing"
)

// TestConnLimitWithinFileDescriptors: without --max-conns, and with one
// above what the descriptors allow, connections stop at 80% of the file
// descriptor limit, leaving the store its files, as in MongoDB.
func TestConnLimitWithinFileDescriptors(t *testing.T) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		t.Skip(err)
	}
	want := int(r.Cur * 8 / 10)
	s, _, _ := startTestServer(t)
	if got := s.connLimit(); got != want {
		t.Errorf("connection limit %d with a descriptor limit of %d, want %d", got, r.Cur, want)
	}
	if want > 10 {
		s, err := New(Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), MaxConns: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown(t.Context())
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		if got := s.connLimit(); got != 10 {
			t.Errorf("connection limit %d with --max-conns 10", got)
		}
	}
}
