package tlsnet

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// testListener serves an Endpoint on 127.0.0.1 and hands over the
// connections it accepts.
type testListener struct {
	ep    *Endpoint
	addr  string
	conns chan net.Conn
	logs  *observer.ObservedLogs
	ca    *tlstest.CA
}

func listen(t *testing.T, cfg Config, ca *tlstest.CA) *testListener {
	t.Helper()
	ep, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	tl := &testListener{ep: ep, addr: ln.Addr().String(), conns: make(chan net.Conn, 10), logs: logs, ca: ca}
	wl := ep.Listener(ln, zap.New(core))
	go func() {
		for {
			c, err := wl.Accept()
			if err != nil {
				close(tl.conns)
				return
			}
			tl.conns <- c
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tl
}

// accept is the next connection the server side accepted.
func (tl *testListener) accept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-tl.conns:
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// clientConfig trusts the listener's CA.
func (tl *testListener) clientConfig() *tls.Config {
	return &tls.Config{RootCAs: tl.ca.Pool(), ServerName: "localhost"}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// roundTrip writes msg on the client side, reads it on the server side and
// answers it back.
func roundTrip(t *testing.T, client, server net.Conn, msg string) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := client.Write([]byte(msg))
		errc <- err
	}()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(server, got); err != nil {
		t.Fatalf("server read: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("server read %q, want %q", got, msg)
	}
	if err := <-errc; err != nil {
		t.Fatalf("client write: %v", err)
	}
	go func() {
		_, err := server.Write(got)
		errc <- err
	}()
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(client, back); err != nil {
		t.Fatalf("client read: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("server write: %v", err)
	}
}

// tlsDial connects with TLS and completes the round trip msg, returning both
// sides.
func (tl *testListener) tlsDial(t *testing.T, cfg *tls.Config) (*tls.Conn, net.Conn) {
	t.Helper()
	tc := tls.Client(dial(t, tl.addr), cfg)
	srv := tl.accept(t)
	roundTrip(t, tc, srv, "hello over tls")
	return tc, srv
}

func newTestListener(t *testing.T, mode Mode, mutate ...func(*Config)) *testListener {
	t.Helper()
	ca := tlstest.NewCA(t, "test CA")
	f := ca.ServerFiles(t, t.TempDir(), "server one")
	cfg := Config{CertFile: f.Cert, KeyFile: f.Key, Mode: mode}
	for _, m := range mutate {
		m(&cfg)
	}
	return listen(t, cfg, ca)
}

func TestReloadSwapsCertificate(t *testing.T) {
	tl := newTestListener(t, Require)
	old, oldSrv := tl.tlsDial(t, tl.clientConfig())
	if cn := old.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "server one" {
		t.Fatalf("first handshake saw %q", cn)
	}

	// A new pair from another CA, to show the CA pool is reread too.
	ca2 := tlstest.NewCA(t, "second CA")
	cfg := tl.ep.Config()
	c, k := ca2.Issue(t, pkix.Name{CommonName: "server two"}, true)
	tlstest.WriteFile(t, cfg.CertFile, c)
	tlstest.WriteFile(t, cfg.KeyFile, k)
	if err := tl.ep.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	tl.ca = ca2
	tc, _ := tl.tlsDial(t, tl.clientConfig())
	if cn := tc.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "server two" {
		t.Errorf("handshake after reload saw %q, want server two", cn)
	}
	// The connection opened before the reload still works.
	roundTrip(t, old, oldSrv, "still here")
}

func TestFailedReloadKeepsCertificate(t *testing.T) {
	tl := newTestListener(t, Require)
	cfg := tl.ep.Config()
	tlstest.WriteFile(t, cfg.KeyFile, []byte("not a key"))
	if err := tl.ep.Reload(); err == nil || !strings.Contains(err.Error(), "keeping") {
		t.Fatalf("reload of a broken key: %v", err)
	}
	os.Remove(cfg.CertFile)
	if err := tl.ep.Reload(); err == nil {
		t.Fatal("reload of a missing certificate succeeded")
	}
	tc, _ := tl.tlsDial(t, tl.clientConfig())
	if cn := tc.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "server one" {
		t.Errorf("handshake after failed reload saw %q, want server one", cn)
	}
}

func TestFailedReloadOfCAKeepsAll(t *testing.T) {
	tl := newTestListener(t, Require, withCA)
	cfg := tl.ep.Config()
	c, k := tl.ca.Issue(t, pkix.Name{CommonName: "server two"}, true)
	tlstest.WriteFile(t, cfg.CertFile, c)
	tlstest.WriteFile(t, cfg.KeyFile, k)
	tlstest.WriteFile(t, cfg.CAFile, []byte("no PEM here"))
	if err := tl.ep.Reload(); err == nil {
		t.Fatal("reload with an empty CA file succeeded")
	}
	if cn := tl.ep.Certificate().Subject.CommonName; cn != "server one" {
		t.Errorf("a reload failing on its CA file swapped the certificate to %q", cn)
	}
}

func TestPlainAndTLSOnOnePort(t *testing.T) {
	for _, mode := range []Mode{Allow, Prefer} {
		t.Run(mode.String(), func(t *testing.T) {
			tl := newTestListener(t, mode)
			tl.tlsDial(t, tl.clientConfig())
			// A MongoDB message starts with its length; the server side
			// reads it whole, first byte included.
			plain := dial(t, tl.addr)
			srv := tl.accept(t)
			roundTrip(t, plain, srv, "\x2a\x00\x00\x00rest of a message")
			if srv.(*Conn).IsTLS() {
				t.Error("plain connection reports TLS")
			}
			if _, ok := PeerSubject(srv); ok {
				t.Error("plain connection has a peer subject")
			}
		})
	}
}

func TestRequireRefusesPlain(t *testing.T) {
	tl := newTestListener(t, Require)
	plain := dial(t, tl.addr)
	if _, err := plain.Write([]byte("\x2a\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	srv := tl.accept(t)
	if _, err := srv.Read(make([]byte, 4)); !errors.Is(err, ErrPlainRefused) {
		t.Fatalf("server read of a plain connection: %v, want ErrPlainRefused", err)
	}
	if n, err := plain.Read(make([]byte, 1)); err == nil {
		t.Fatalf("client read %d bytes from a refused connection", n)
	}
	if got := tl.logs.FilterMessageSnippet("plain connection refused").All(); len(got) != 1 || got[0].ContextMap()["remote"] != plain.LocalAddr().String() {
		t.Errorf("refusal logged as %v", got)
	}
}

func TestSilentClientBlocksNoOne(t *testing.T) {
	tl := newTestListener(t, Allow)
	dial(t, tl.addr) // connects and says nothing
	silent := tl.accept(t)
	// Accept returned it without waiting for a byte; the next client is
	// served while the silent one's first read waits under its deadline.
	tl.tlsDial(t, tl.clientConfig())
	silent.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("silent connection's read: %v, want the deadline exceeded", err)
	}
}

func TestOldTLSVersionsRefused(t *testing.T) {
	tl := newTestListener(t, Require)
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		cfg := tl.clientConfig()
		cfg.MinVersion, cfg.MaxVersion = v, v
		tc := tls.Client(dial(t, tl.addr), cfg)
		srv := tl.accept(t)
		go srv.Read(make([]byte, 1))
		if err := tc.Handshake(); err == nil {
			t.Errorf("handshake at %s succeeded", tls.VersionName(v))
		}
	}
	cfg := tl.clientConfig()
	cfg.MaxVersion = tls.VersionTLS12
	tc, _ := tl.tlsDial(t, cfg)
	if v := tc.ConnectionState().Version; v != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 client got version %s", tls.VersionName(v))
	}
}

var clientSubject = pkix.Name{Country: []string{"US"}, Province: []string{"New York"}, Locality: []string{"New York City"},
	Organization: []string{"MongoDB"}, OrganizationalUnit: []string{"KernelUser"}, CommonName: "client"}

const clientSubjectString = "CN=client,OU=KernelUser,O=MongoDB,L=New York City,ST=New York,C=US"

func withCA(c *Config) { c.CAFile = filepath.Join(filepath.Dir(c.CertFile), "ca.pem") }

func TestClientCertificates(t *testing.T) {
	tl := newTestListener(t, Require, withCA)
	cfg := tl.clientConfig()
	cfg.Certificates = []tls.Certificate{tl.ca.ClientCert(t, clientSubject)}
	_, srv := tl.tlsDial(t, cfg)
	if got, ok := PeerSubject(srv); !ok || got != clientSubjectString {
		t.Errorf("PeerSubject = %q, %v; want %q", got, ok, clientSubjectString)
	}
	if !srv.(*Conn).IsTLS() || srv.(*Conn).Version() != "TLS 1.3" {
		t.Errorf("TLS connection reports TLS %v, version %q", srv.(*Conn).IsTLS(), srv.(*Conn).Version())
	}

	// Without a certificate, or with one another CA signed, the server
	// refuses the handshake.
	other := tlstest.NewCA(t, "other CA")
	for name, tc := range map[string]struct {
		cert *tls.Certificate
		want string
	}{
		"none":     {nil, "didn't provide a certificate"},
		"other CA": {ptr(other.ClientCert(t, clientSubject)), "unknown authority"},
	} {
		cert := tc.cert
		cfg := tl.clientConfig()
		if cert != nil {
			cfg.GetClientCertificate = sendAnyway(cert)
		}
		client := tls.Client(dial(t, tl.addr), cfg)
		go client.Write([]byte("x"))
		srv := tl.accept(t)
		if _, err := srv.Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("client certificate %s: server read %v, want a failed handshake", name, err)
		}
		if _, ok := PeerSubject(srv); ok {
			t.Errorf("client certificate %s: a failed handshake has a peer subject", name)
		}
	}
}

func TestAllowConnectionsWithoutCertificates(t *testing.T) {
	tl := newTestListener(t, Require, withCA, func(c *Config) { c.AllowConnectionsWithoutCertificates = true })
	_, srv := tl.tlsDial(t, tl.clientConfig())
	if _, ok := PeerSubject(srv); ok {
		t.Error("a client without a certificate has a peer subject")
	}
	cfg := tl.clientConfig()
	cfg.Certificates = []tls.Certificate{tl.ca.ClientCert(t, clientSubject)}
	if _, srv := tl.tlsDial(t, cfg); !func() bool { s, ok := PeerSubject(srv); return ok && s == clientSubjectString }() {
		t.Error("a client with a certificate lacks its subject")
	}
	// A certificate presented is still verified.
	cfg = tl.clientConfig()
	cfg.GetClientCertificate = sendAnyway(ptr(tlstest.NewCA(t, "other CA").ClientCert(t, clientSubject)))
	tc := tls.Client(dial(t, tl.addr), cfg)
	go tc.Write([]byte("x"))
	if _, err := tl.accept(t).Read(make([]byte, 1)); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Error("a certificate from another CA was accepted")
	}
}

func TestNoCAAsksNoCertificate(t *testing.T) {
	tl := newTestListener(t, Require)
	cfg := tl.clientConfig()
	asked := false
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked = true
		return &tls.Certificate{}, nil
	}
	_, srv := tl.tlsDial(t, cfg)
	if asked {
		t.Error("the server asked for a client certificate without a CA file")
	}
	if _, ok := PeerSubject(srv); ok {
		t.Error("peer subject without a client certificate")
	}
}

func ptr[T any](v T) *T { return &v }

// sendAnyway makes a client present cert even when the server's list of
// acceptable authorities does not name its issuer, which a client given
// Config.Certificates would not do.
func sendAnyway(cert *tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
}

// TestNoSessionResumption: every connection verifies its client afresh, so
// that a reload dropping a CA cannot be bypassed by resuming a session.
func TestNoSessionResumption(t *testing.T) {
	tl := newTestListener(t, Require, withCA)
	cfg := tl.clientConfig()
	cfg.Certificates = []tls.Certificate{tl.ca.ClientCert(t, clientSubject)}
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	for i := range 2 {
		tc, _ := tl.tlsDial(t, cfg)
		// A TLS 1.3 ticket arrives after the handshake; the round trip
		// has read past it.
		if tc.ConnectionState().DidResume {
			t.Errorf("connection %d resumed a session", i)
		}
	}
}
