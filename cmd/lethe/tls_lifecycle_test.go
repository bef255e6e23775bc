//go:build unix

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// TestTLSLifecycle runs the binary with --tls-mode require: a TLS client is
// served, and after SIGHUP new connections get the replaced certificate.
func TestTLSLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "lethe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ca := tlstest.NewCA(t, "test CA")
	f := ca.ServerFiles(t, dir, "first")
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--log-format", "json",
		"--tls-mode", "require", "--tls-cert-file", f.Cert, "--tls-key-file", f.Key)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logs := make(chan map[string]any, 100)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var entry map[string]any
			if json.Unmarshal(sc.Bytes(), &entry) == nil {
				logs <- entry
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	waitLog := func(msg string) map[string]any {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e, ok := <-logs:
				if !ok {
					t.Fatalf("lethe exited before logging %q", msg)
				}
				if e["msg"] == msg {
					return e
				}
			case <-timeout:
				t.Fatalf("no %q log line", msg)
			}
		}
	}
	listening := waitLog("lethe listening")
	addr := listening["addr"].(string)
	if listening["tlsMode"] != "require" {
		t.Errorf("listening with tlsMode %v", listening["tlsMode"])
	}
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).SetTLSConfig(&tls.Config{RootCAs: ca.Pool()}).
		SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping over TLS: %v", err)
	}
	client.Disconnect(context.Background())

	served := func() string {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err != nil {
			t.Fatalf("TLS dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served certificate %q, want first", cn)
	}
	c, k := ca.Issue(t, pkix.Name{CommonName: "second"}, true)
	tlstest.WriteFile(t, f.Cert, c)
	tlstest.WriteFile(t, f.Key, k)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("TLS certificates reloaded")
	if cn := served(); cn != "second" {
		t.Errorf("served certificate after SIGHUP %q, want second", cn)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range logs {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
