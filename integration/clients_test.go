package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The real clients live outside Go: `make test` installs the Node ones with
// npm ci from clients/package-lock.json; pymongo comes from Debian's
// python3-pymongo package.
const (
	mongoshPath = "clients/node_modules/.bin/mongosh"
	nodeDriver  = "clients/node_modules/mongodb"
	python      = "/usr/bin/python3"
)

// requireClient skips the test when a client is not installed, or fails it
// when LETHE_REQUIRE_CLIENTS or CI is set, so that CI cannot pass by
// skipping.
func requireClient(t *testing.T, installed bool, what, howTo string) {
	t.Helper()
	if installed {
		return
	}
	msg := "!!! CLIENT MISSING: " + what + " is not installed, so this test cannot run. Install it with: " + howTo
	if os.Getenv("LETHE_REQUIRE_CLIENTS") != "" || os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (set LETHE_REQUIRE_CLIENTS=1 to make this a failure)")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runClient runs a client program and returns its stdout and stderr.
func runClient(t *testing.T, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	// A private HOME keeps mongosh's history, logs and config out of the
	// user's, and a stray user config out of the test.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "MONGOSH_NO_UPDATE_CHECK=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

func TestMongosh(t *testing.T) {
	requireClient(t, exists(mongoshPath), "mongosh", "npm ci --prefix integration/clients (make test does it)")
	ts := startServer(t)
	uri := ts.URI + "test"
	for _, tc := range []struct{ eval, want string }{
		{"db.runCommand({ping:1}).ok", "1"},
		{"db.version()", "7.0.0"},
		{"db.adminCommand({getParameter: 1, featureCompatibilityVersion: 1}).featureCompatibilityVersion.version", "7.0"},
	} {
		stdout, stderr := runClient(t, mongoshPath, uri, "--quiet", "--eval", tc.eval)
		if got := strings.TrimSpace(stdout); got != tc.want {
			t.Errorf("mongosh --eval %q printed %q, want %q", tc.eval, stdout, tc.want)
		}
		if stderr != "" {
			t.Errorf("mongosh --eval %q wrote to stderr:\n%s", tc.eval, stderr)
		}
	}
}

// clientResult is what the driver scripts print.
type clientResult struct {
	OK      float64 `json:"ok"`
	Version string  `json:"version"`
}

func checkClientResult(t *testing.T, stdout string) {
	t.Helper()
	var got clientResult
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("client output %q: %v", stdout, err)
	}
	if got.OK != 1 || got.Version != "7.0.0" {
		t.Errorf("client saw %+v, want ok 1 and version 7.0.0", got)
	}
}

func TestNodeDriver(t *testing.T) {
	requireClient(t, exists(nodeDriver), "the MongoDB Node.js driver", "npm ci --prefix integration/clients (make test does it)")
	ts := startServer(t)
	stdout, _ := runClient(t, "node", filepath.Join("clients", "ping.mjs"), ts.URI)
	checkClientResult(t, stdout)
}

func TestPymongo(t *testing.T) {
	installed := exec.Command(python, "-c", "import pymongo").Run() == nil
	requireClient(t, installed, "pymongo for "+python, "apt-get install -y python3-pymongo")
	ts := startServer(t)
	stdout, _ := runClient(t, python, filepath.Join("clients", "ping.py"), ts.URI)
	checkClientResult(t, stdout)
}

// runNodeScript runs clients/<script> with the Node.js driver against uri,
// more arguments following it; the script prints OK when every check
// passed.
func runNodeScript(t *testing.T, script, uri string, more ...string) {
	t.Helper()
	requireClient(t, exists(nodeDriver), "the MongoDB Node.js driver", "npm ci --prefix integration/clients (make test does it)")
	stdout, stderr := runClient(t, "node", append([]string{filepath.Join("clients", script), uri}, more...)...)
	if strings.TrimSpace(stdout) != "OK" || stderr != "" {
		t.Errorf("%s printed %q, stderr %q", script, stdout, stderr)
	}
}

// runPythonScript runs clients/<script> with pymongo against uri, more
// arguments following it; the script prints OK when every check passed.
func runPythonScript(t *testing.T, script, uri string, more ...string) {
	t.Helper()
	installed := exec.Command(python, "-c", "import pymongo").Run() == nil
	requireClient(t, installed, "pymongo for "+python, "apt-get install -y python3-pymongo")
	stdout, stderr := runClient(t, python, append([]string{filepath.Join("clients", script), uri}, more...)...)
	if strings.TrimSpace(stdout) != "OK" || stderr != "" {
		t.Errorf("%s printed %q, stderr %q", script, stdout, stderr)
	}
}

// TestPymongoAggregate runs a Python application's aggregations: a join,
// dates in a time zone, a histogram, a view and $out.
func TestPymongoAggregate(t *testing.T) {
	runPythonScript(t, "aggregate.py", startServer(t).URI)
}

// TestNodeDriverAggregate runs a Node.js application's aggregations: a
// correlated $lookup, $sortByCount, $unionWith and a spilling sort read in
// batches.
func TestNodeDriverAggregate(t *testing.T) {
	runNodeScript(t, "aggregate.mjs", startServer(t).URI)
}
