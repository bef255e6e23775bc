package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/tlsnet"
)

// tlsRounds is how many times the tls workload measures each request over
// each transport, in an order that changes every round: one round per
// variant, so that each comes once in each place.
const tlsRounds = 4

// runTLS measures what TLS costs requests: findOne by _id and insertOne
// from two clients of one in-process server in TLS mode allow, one over TLS
// and one over plain TCP, in alternating rounds of the same run, so that
// both see the same data and the same machine load. The plain figures are
// the ceiling; the issue sets no target. Connections are pooled and opened
// beforehand: handshakes are not measured here.
func runTLS(ctx context.Context, e *env) ([]result, error) {
	dir, err := os.MkdirTemp("", "lethe-load-tls-")
	if err != nil {
		return nil, fmt.Errorf("create certificate directory: %w", err)
	}
	defer os.RemoveAll(dir)
	files, roots, err := writeServerCert(dir)
	if err != nil {
		return nil, err
	}
	endpoint, err := tlsnet.New(tlsnet.Config{CertFile: files.cert, KeyFile: files.key, Mode: tlsnet.Allow})
	if err != nil {
		return nil, err
	}
	addr, stop, err := startServer(serverKind{tls: endpoint})
	if err != nil {
		return nil, err
	}
	defer stop()

	var colls [2]*mongo.Collection // docs over TLS, over plain TCP
	for i, tc := range []*tls.Config{{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil} {
		client, err := pooledClient(ctx, addr, e.cfg.clients, options.Client().SetTLSConfig(tc))
		if err != nil {
			return nil, err
		}
		defer client.Disconnect(context.Background())
		colls[i] = client.Database(e.db.Name()).Collection("docs")
	}
	// Both clients see the same documents: load them once, through either.
	pe := &env{cfg: e.cfg, db: colls[1].Database(), progress: e.progress}
	if _, err := pe.preload(ctx); err != nil {
		return nil, err
	}
	inserts := [2]*mongo.Collection{
		colls[0].Database().Collection("insert"),
		colls[1].Database().Collection("insert"),
	}
	if err := drop(ctx, inserts[1]); err != nil {
		return nil, err
	}

	// The preload's flushes and compactions would slow whichever round
	// came first: let them pass under unmeasured ones.
	round := e.cfg.duration / tlsRounds
	for _, coll := range colls {
		if _, err := measureFor(ctx, e.cfg.clients, round/2, findOneOp(coll, e.cfg.docs)); err != nil {
			return nil, err
		}
	}
	// Variants: findOne over TLS, over plain; insert over TLS, over plain.
	samples, err := alternate(tlsRounds, 4, func(i int) (sample, error) {
		if i < 2 {
			return measureFor(ctx, e.cfg.clients, round, findOneOp(colls[i], e.cfg.docs))
		}
		newOp, err := insertOp(inserts[i-2])
		if err != nil {
			return sample{}, err
		}
		return measureFor(ctx, e.cfg.clients, round, newOp)
	})
	if err != nil {
		return nil, err
	}
	return []result{
		{name: "findone-tls", sample: samples[0], ceiling: "findone-plain"},
		{name: "findone-plain", sample: samples[1]},
		{name: "insert-tls", sample: samples[2], ceiling: "insert-plain"},
		{name: "insert-plain", sample: samples[3]},
	}, nil
}

type certFiles struct{ cert, key string }

// writeServerCert makes a certificate authority and a certificate it signs
// for 127.0.0.1 and localhost, writes the certificate and its key to dir
// and returns their paths and a pool holding the authority for clients to
// trust. Both live as long as the run: nothing is kept.
func writeServerCert(dir string) (certFiles, *x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certFiles{}, nil, fmt.Errorf("generate CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lethe-load CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return certFiles{}, nil, fmt.Errorf("create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return certFiles{}, nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certFiles{}, nil, fmt.Errorf("generate server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return certFiles{}, nil, fmt.Errorf("create server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return certFiles{}, nil, fmt.Errorf("encode server key: %w", err)
	}
	f := certFiles{cert: filepath.Join(dir, "server.pem"), key: filepath.Join(dir, "server.key")}
	if err := os.WriteFile(f.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return certFiles{}, nil, err
	}
	if err := os.WriteFile(f.key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return certFiles{}, nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return f, roots, nil
}
