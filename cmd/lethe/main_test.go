package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestLifecycle builds and runs the binary: it serves the protocol and
// metrics on the addresses it logs, and exits cleanly on SIGTERM.
func TestLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	proc := startBinary(t, dir, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--clock", "manual", "--metrics-listen", "127.0.0.1:0", "--pprof-listen", "127.0.0.1:0", "--cache-size-mb", "64", "--repl-set", "rs0")
	addrOf := func(msg string) string {
		t.Helper()
		return proc.waitLog(msg)["addr"].(string)
	}
	addr := addrOf("lethe listening")
	metricsAddr := addrOf("serving metrics")
	pprofAddr := addrOf("serving the profiler")

	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
	// --repl-set: the primary of a one-member set, advertised by the
	// address it listens on.
	var hello struct {
		SetName string `bson:"setName"`
		Me      string `bson:"me"`
	}
	if err := client.Database("admin").RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatalf("hello: %v", err)
	}
	if hello.SetName != "rs0" || hello.Me != addr {
		t.Errorf("hello: setName %q, me %q; want rs0 and %s", hello.SetName, hello.Me, addr)
	}
	client.Disconnect(context.Background())

	// --pprof-listen serves Go's profiler.
	presp, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.StatusCode != http.StatusOK || !strings.Contains(string(cmdline), "--pprof-listen") {
		t.Errorf("/debug/pprof/cmdline: %d %q", presp.StatusCode, cmdline)
	}

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"lethe_connections_accepted_total", "lethe_ttl_passes_total", "lethe_ttl_subpasses_total", "lethe_ttl_deleted_documents_total"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %s:\n%s", name, body)
		}
	}

	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := proc.wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
