package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/lethedb/lethe/server"
)

// TestHelpListsLimits: --help names every limit and timeout, with its flag
// when one sets it.
func TestHelpListsLimits(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	err = run([]string{"lethe", "--help"})
	os.Stderr = stderr
	w.Close()
	out, _ := io.ReadAll(r)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run --help: %v", err)
	}
	want := []string{"-store ", "-store-prefix", "-max-conns", "-message-timeout", "-idle-timeout", "-max-cursors ", "-max-cursors-per-conn", "-max-cursor-memory-mib", "-max-cursors-per-client", "-max-cursor-memory-per-client-mib", "-max-sessions ", "-max-sessions-per-client", "-repl-set", "-advertise-addr", "-auth", "-insecure-no-auth-remote", "-tls-cert-file", "-tls-key-file", "-tls-ca-file", "-tls-mode", "-tls-allow-connections-without-certificates", "shutdown grace"}
	for _, l := range server.FixedLimits() {
		want = append(want, l.Name+" ")
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("--help lacks %q:\n%s", w, out)
		}
	}
}
