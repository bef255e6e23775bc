//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
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
	ca := tlstest.NewCA(t, "test CA")
	f := ca.ServerFiles(t, dir, "first")
	proc := startBinary(t, dir, "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--tls-mode", "require", "--tls-cert-file", f.Cert, "--tls-key-file", f.Key)
	waitLog := proc.waitLog
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
	if err := proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog("TLS certificates reloaded")
	if cn := served(); cn != "second" {
		t.Errorf("served certificate after SIGHUP %q, want second", cn)
	}

	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := proc.wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
