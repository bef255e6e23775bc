package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// TestBindingRule: without --auth the server listens on loopback only,
// unless --insecure-no-auth-remote says otherwise.
func TestBindingRule(t *testing.T) {
	for _, tc := range []struct {
		listen         string
		auth, insecure bool
		ok             bool
	}{
		{"127.0.0.1:27017", false, false, true},
		{"127.0.0.5:27017", false, false, true},
		{"localhost:27017", false, false, true},
		{"[::1]:27017", false, false, true},
		{"0.0.0.0:27017", false, false, false},
		{":27017", false, false, false},
		{"[::]:27017", false, false, false},
		{"10.1.2.3:27017", false, false, false},
		{"db.example.com:27017", false, false, false},
		{"0.0.0.0:27017", true, false, true},
		{"0.0.0.0:27017", false, true, true},
		{"10.1.2.3:27017", true, true, true},
	} {
		err := checkBinding(tc.listen, tc.auth, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("--listen %s --auth=%v --insecure-no-auth-remote=%v: %v", tc.listen, tc.auth, tc.insecure, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--auth") {
			t.Errorf("refusal does not say how to proceed: %v", err)
		}
	}
	if err := checkBinding("no port", false, false); err == nil {
		t.Error("a --listen without a port passed")
	}
}

// TestRunRefusesBadSetups: run stops at a non-loopback address without
// --auth and at TLS flags that do not fit together, before opening the
// store.
func TestRunRefusesBadSetups(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	f := ca.ServerFiles(t, t.TempDir(), "server")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "--insecure-no-auth-remote"},
		{[]string{"--pprof-listen", "0.0.0.0:0"}, "only on a loopback address"},
		{[]string{"--cache-size-mb", "0"}, "--cache-size-mb: want more than 0"},
		{[]string{"--tls-mode", "sometimes"}, "--tls-mode: want disabled, allow, prefer or require"},
		{[]string{"--tls-mode", "require"}, "needs --tls-cert-file and --tls-key-file"},
		{[]string{"--tls-mode", "allow", "--tls-cert-file", f.Cert}, "needs --tls-cert-file and --tls-key-file"},
		{[]string{"--tls-cert-file", f.Cert, "--tls-key-file", f.Key}, "need --tls-mode allow, prefer or require"},
		{[]string{"--tls-mode", "require", "--tls-cert-file", f.Cert, "--tls-key-file", f.Key, "--tls-allow-connections-without-certificates"}, "needs --tls-ca-file"},
		{[]string{"--tls-mode", "require", "--tls-cert-file", f.Cert, "--tls-key-file", f.CA}, "load certificate"},
		{[]string{"--tls-mode", "require", "--tls-cert-file", f.Cert, "--tls-key-file", f.Key, "--tls-ca-file", filepath.Join(t.TempDir(), "missing.pem")}, "read CA file"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		err := run(append([]string{"lethe", "--data-dir", dir}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error saying %q", tc.args, err, tc.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%q: the data directory was created", tc.args)
		}
	}
}
