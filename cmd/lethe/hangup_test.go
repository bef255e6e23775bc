//go:build unix

package main

import (
	"crypto/x509/pkix"
	"io"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/tlsnet"
	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// TestReloadOnHangup: SIGHUP reloads the TLS files, and a reload that
// fails keeps the certificate in use; both are logged.
func TestReloadOnHangup(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	f := ca.ServerFiles(t, t.TempDir(), "first")
	ep, err := tlsnet.New(tlsnet.Config{CertFile: f.Cert, KeyFile: f.Key, Mode: tlsnet.Require})
	if err != nil {
		t.Fatal(err)
	}
	logged := make(chan zapcore.Entry, 10)
	log := zap.New(zapcore.RegisterHooks(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.InfoLevel), func(e zapcore.Entry) error {
		logged <- e
		return nil
	}))
	stop := reloadOnHangup(ep, log)
	defer stop()
	hangup := func(want string) {
		t.Helper()
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-logged:
			if e.Message != want {
				t.Fatalf("SIGHUP logged %q, want %q", e.Message, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("SIGHUP logged nothing; want %q", want)
		}
	}

	c, k := ca.Issue(t, pkix.Name{CommonName: "second"}, true)
	tlstest.WriteFile(t, f.Cert, c)
	tlstest.WriteFile(t, f.Key, k)
	hangup("TLS certificates reloaded")
	if cn := ep.Certificate().Subject.CommonName; cn != "second" {
		t.Errorf("after SIGHUP the certificate is %q, want second", cn)
	}

	tlstest.WriteFile(t, f.Key, []byte("garbage"))
	hangup("TLS certificate reload failed")
	if cn := ep.Certificate().Subject.CommonName; cn != "second" {
		t.Errorf("after a failed reload the certificate is %q, want second", cn)
	}
}
