package integration

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/tlsnet"
	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// TestTLSRequire: under require, TLS clients are served and plain ones
// refused, as mongod's requireTLS.
func TestTLSRequire(t *testing.T) {
	s := newTLS(t, tlsnet.Require, false, false)
	ts := startServer(t, withTLS(s.EP))
	if err := pingWith(t, ts, s.clientTLS()); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	if err := pingWith(t, ts, nil); err == nil {
		t.Fatal("plain client served under require")
	}
	if ts.Logs.FilterMessage("plain connection refused: TLS is required").Len() == 0 {
		t.Error("no log of the refused plain connection")
	}
	// A client trusting another CA does not accept the server.
	other := tlstest.NewCA(t, "other CA")
	if err := pingWith(t, ts, &tls.Config{RootCAs: other.Pool()}); err == nil {
		t.Error("client that does not trust the server's CA connected")
	}
}

// TestTLSAllowPrefer: allow and prefer serve TLS and plain clients alike.
func TestTLSAllowPrefer(t *testing.T) {
	for _, mode := range []tlsnet.Mode{tlsnet.Allow, tlsnet.Prefer} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newTLS(t, mode, false, false)
			ts := startServer(t, withTLS(s.EP))
			if err := pingWith(t, ts, s.clientTLS()); err != nil {
				t.Errorf("TLS client: %v", err)
			}
			if err := pingWith(t, ts, nil); err != nil {
				t.Errorf("plain client: %v", err)
			}
		})
	}
}

var tlsClientSubject = pkix.Name{Country: []string{"US"}, Province: []string{"New York"}, Locality: []string{"New York City"},
	Organization: []string{"MongoDB"}, OrganizationalUnit: []string{"KernelUser"}, CommonName: "client"}

// TestTLSClientCertificates: with a CA file, a client must present a
// certificate that CA signed, and the server knows its subject in the form
// MONGODB-X509 user names take.
func TestTLSClientCertificates(t *testing.T) {
	s := newTLS(t, tlsnet.Require, true, false)
	ts := startServer(t, withTLS(s.EP))
	if err := pingWith(t, ts, s.clientTLS(s.clientCert(t, tlsClientSubject))); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	const want = "CN=client,OU=KernelUser,O=MongoDB,L=New York City,ST=New York,C=US"
	accepted := ts.Logs.FilterMessage("accepted TLS connection").All()
	found := false
	for _, e := range accepted {
		if e.ContextMap()["peerSubject"] == want {
			found = true
		}
	}
	if !found {
		t.Errorf("no TLS connection logged with peer subject %q: %v", want, accepted)
	}

	if err := pingWith(t, ts, s.clientTLS()); err == nil {
		t.Error("client without a certificate connected")
	}
	other := tlstest.NewCA(t, "other CA")
	wrong := other.ClientCert(t, tlsClientSubject)
	cfg := s.clientTLS()
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &wrong, nil }
	if err := pingWith(t, ts, cfg); err == nil {
		t.Error("client with a certificate from another CA connected")
	}
	// Both were refused by the server's verification, and it says why.
	for _, why := range []string{"didn't provide a certificate", "unknown authority"} {
		if loggedError(ts, why) == 0 {
			t.Errorf("no refused handshake logged with %q", why)
		}
	}
}

// loggedError counts the log entries whose error mentions s.
func loggedError(ts *testServer, s string) int {
	n := 0
	for _, e := range ts.Logs.All() {
		if err, ok := e.ContextMap()["error"].(string); ok && strings.Contains(err, s) {
			n++
		}
	}
	return n
}

// TestTLSAllowConnectionsWithoutCertificates: with the flag, a client may
// connect over TLS without a certificate, as mongod's
// --tlsAllowConnectionsWithoutCertificates.
func TestTLSAllowConnectionsWithoutCertificates(t *testing.T) {
	s := newTLS(t, tlsnet.Require, true, true)
	ts := startServer(t, withTLS(s.EP))
	if err := pingWith(t, ts, s.clientTLS()); err != nil {
		t.Errorf("client without a certificate: %v", err)
	}
	if err := pingWith(t, ts, s.clientTLS(s.clientCert(t, tlsClientSubject))); err != nil {
		t.Errorf("client with a certificate: %v", err)
	}
}

// TestTLSMongosh: mongosh connects with --tls, trusting the test CA.
func TestTLSMongosh(t *testing.T) {
	requireClient(t, exists(mongoshPath), "mongosh", "npm ci --prefix integration/clients (make test does it)")
	s := newTLS(t, tlsnet.Require, false, false)
	ts := startServer(t, withTLS(s.EP))
	stdout, stderr := runClient(t, mongoshPath, ts.URI+"test", "--tls", "--tlsCAFile", s.Files.CA, "--quiet",
		"--eval", "db.runCommand({ping: 1}).ok")
	if strings.TrimSpace(stdout) != "1" || stderr != "" {
		t.Errorf("mongosh --tls printed %q, stderr %q", stdout, stderr)
	}
}

// TestTLSStalledHandshake: a client that connects and says nothing, or
// starts a handshake and stops, delays no one else, and is closed after the
// message timeout like any client that sends no first message.
func TestTLSStalledHandshake(t *testing.T) {
	s := newTLS(t, tlsnet.Allow, false, false)
	ts := startServer(t, withTLS(s.EP), withMessageTimeout(500*time.Millisecond))
	silent := dialRaw(t, ts)
	stalled := dialRaw(t, ts)
	if _, err := stalled.Write([]byte{0x16, 0x03, 0x01}); err != nil { // a handshake record header, cut short
		t.Fatal(err)
	}
	if err := pingWith(t, ts, s.clientTLS()); err != nil {
		t.Fatalf("TLS client beside stalled ones: %v", err)
	}
	for _, c := range []*rawConn{silent, stalled} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("stalled connection not closed by the server: %v", err)
		}
	}
	if n := ts.Logs.FilterMessage("closing connection: no message within the message timeout of connecting").Len(); n != 2 {
		t.Errorf("%d stalled connections logged as timed out, want 2", n)
	}
}
