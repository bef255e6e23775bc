package tlsnet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// MinVersion is the oldest TLS version served: 1.0 and 1.1 are deprecated
// (RFC 8996), and MongoDB 7.0's drivers all speak 1.2.
const MinVersion = tls.VersionTLS12

// Endpoint is the TLS side of a listening port: its mode and its current
// certificate, key and CA pool, which Reload replaces.
type Endpoint struct {
	cfg Config
	// cur is the configuration handshakes use, rebuilt whole by each load
	// and swapped in one step, so that a handshake never sees a new
	// certificate with an old CA pool. Handshakes under way and
	// connections already open keep the one they started with.
	cur atomic.Pointer[tls.Config]
	// server is what tls.Server is given, one for all connections: it
	// hands each handshake cur.
	server *tls.Config
}

// New validates cfg and loads its files. A disabled mode has no Endpoint:
// New refuses it.
func New(cfg Config) (*Endpoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Mode == Disabled {
		return nil, errors.New("tls: mode is disabled")
	}
	e := &Endpoint{cfg: cfg}
	tc, err := e.load()
	if err != nil {
		return nil, err
	}
	e.cur.Store(tc)
	e.server = &tls.Config{
		MinVersion: MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return e.cur.Load(), nil
		},
	}
	return e, nil
}

// Mode is the endpoint's mode.
func (e *Endpoint) Mode() Mode { return e.cfg.Mode }

// Config is what the endpoint was built from.
func (e *Endpoint) Config() Config { return e.cfg }

// Reload reads the certificate, key and CA files again and serves the new
// ones to the handshakes that follow; open connections are untouched. If a
// file cannot be read or parsed, the ones in use stay and the error says
// why.
func (e *Endpoint) Reload() error {
	tc, err := e.load()
	if err != nil {
		return fmt.Errorf("tls: reload: %w (keeping the certificates in use)", err)
	}
	e.cur.Store(tc)
	return nil
}

// Certificate is the leaf certificate served now.
func (e *Endpoint) Certificate() *x509.Certificate {
	return e.cur.Load().Certificates[0].Leaf
}

// ServerConfig is the configuration for tls.Server that always uses the
// endpoint's current certificates; it must not be changed.
func (e *Endpoint) ServerConfig() *tls.Config { return e.server }

// load builds a handshake configuration from the files.
func (e *Endpoint) load() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(e.cfg.CertFile, e.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: load certificate %s and key %s: %w", e.cfg.CertFile, e.cfg.KeyFile, err)
	}
	if cert.Leaf == nil { // LoadX509KeyPair leaves it nil under GODEBUG=x509keypairleaf=0
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls: parse certificate %s: %w", e.cfg.CertFile, err)
		}
	}
	// No session tickets: a resumed session keeps the client certificate
	// it was first verified with, and would outlive a reload that drops
	// the CA which signed it. Drivers keep their connections pooled, so a
	// full handshake each time costs little.
	tc := &tls.Config{MinVersion: MinVersion, Certificates: []tls.Certificate{cert}, ClientAuth: tls.NoClientCert,
		SessionTicketsDisabled: true}
	if e.cfg.CAFile != "" {
		pem, err := os.ReadFile(e.cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls: CA file %s holds no PEM certificate", e.cfg.CAFile)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		if e.cfg.AllowConnectionsWithoutCertificates {
			tc.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	return tc, nil
}
