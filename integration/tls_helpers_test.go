package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
	"github.com/lethedb/lethe/tlsnet"
	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// tlsSetup is a server's TLS material made for one test: its CA signs the
// server's certificate and, when the server is given its file, the clients'.
type tlsSetup struct {
	CA    *tlstest.CA
	Files tlstest.Files
	EP    *tlsnet.Endpoint
}

// newTLS makes a CA and a server certificate for 127.0.0.1 and builds an
// endpoint in mode; withCA gives the server the CA file, so that it
// verifies client certificates.
func newTLS(t *testing.T, mode tlsnet.Mode, withCA, allowWithoutCert bool) *tlsSetup {
	t.Helper()
	ca := tlstest.NewCA(t, "lethe test CA")
	files := ca.ServerFiles(t, t.TempDir(), "lethe test server")
	cfg := tlsnet.Config{CertFile: files.Cert, KeyFile: files.Key, Mode: mode, AllowConnectionsWithoutCertificates: allowWithoutCert}
	if withCA {
		cfg.CAFile = files.CA
	}
	ep, err := tlsnet.New(cfg)
	if err != nil {
		t.Fatalf("tls endpoint: %v", err)
	}
	return &tlsSetup{CA: ca, Files: files, EP: ep}
}

// withTLS serves TLS through ep.
func withTLS(ep *tlsnet.Endpoint) serverOption {
	return func(c *server.Config) { c.TLS = ep }
}

// clientTLS is a client configuration trusting the test CA, presenting the
// given certificates.
func (s *tlsSetup) clientTLS(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{RootCAs: s.CA.Pool(), Certificates: certs}
}

// clientCert is a certificate the test CA signed for subject.
func (s *tlsSetup) clientCert(t *testing.T, subject pkix.Name) tls.Certificate {
	return s.CA.ClientCert(t, subject)
}

// pingWith connects a new client to ts, over TLS when tc is not nil, and
// pings it; it returns the ping's error. A refused client fails within two
// seconds of server selection.
func pingWith(t *testing.T, ts *testServer, tc *tls.Config) error {
	t.Helper()
	opts := options.Client().ApplyURI(ts.URI).SetServerSelectionTimeout(2 * time.Second).SetHeartbeatInterval(500 * time.Millisecond)
	if tc != nil {
		opts.SetTLSConfig(tc)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return err
	}
	defer client.Disconnect(context.Background())
	return client.Database("admin").RunCommand(testCtx(t), bson.D{{Key: "ping", Value: 1}}).Err()
}
