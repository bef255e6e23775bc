package pebblekv

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestFatalStoreErrorExits checks that an error pebble cannot continue from
// ends the process once, with status 1 and a line saying what to do,
// rather than leaving it running with a broken store.
func TestFatalStoreErrorExits(t *testing.T) {
	// The child ends in os.Exit, which runs no test cleanup: it works in
	// a directory of the parent's, which the parent's cleanup removes.
	if dir := os.Getenv("LETHE_TEST_FATAL_CHILD"); dir != "" {
		g := newDiskGuard(dir, Options{Logger: zap.NewExample()})
		storeOptions(g, 0).Logger.Fatalf("pebble: fatal commit error: %v", "write: no space left on device")
		t.Fatal("Fatalf returned")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFatalStoreErrorExits$")
	cmd.Env = append(os.Environ(), "LETHE_TEST_FATAL_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "fatal store error: lethe exits") || !strings.Contains(string(out), "no space left on device") {
		t.Fatalf("no clear log line in the child's output:\n%s", out)
	}
}
