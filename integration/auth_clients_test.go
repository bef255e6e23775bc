package integration

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/tlsnet"
	"github.com/lethedb/lethe/tlsnet/tlstest"
)

// Access control as users meet it in the real clients: mongosh, the Node.js
// driver and pymongo log in with passwords (SCRAM-SHA-1 and -256) and with
// client certificates (MONGODB-X509) over TLS, and so does the Go driver.

// x509Subject is the subject of the client certificate the tests log in
// with, as MongoDB names X.509 users: RFC 2253, most specific name first.
const x509Subject = "CN=client,OU=KernelUser,O=MongoDB,L=New York City,ST=New York,C=US"

// authTLS is a server with access control behind TLS, as a deployment runs
// it: TLS required, client certificates verified against the CA, and
// clients without one (who log in with a password) let in.
type authTLS struct {
	ts  *testServer
	tls *tlsSetup
	// host is the server's host:port.
	host string
	// certFile holds a client certificate and its key (one PEM file, as
	// drivers' tlsCertificateKeyFile takes them) for x509Subject, and
	// strangerFile one for a subject no user is named after.
	certFile, strangerFile string
}

func startAuthTLS(t *testing.T) *authTLS {
	t.Helper()
	s := newTLS(t, tlsnet.Require, true, true)
	ts := startServer(t, withAuth(), withTLS(s.EP))
	a := &authTLS{ts: ts, tls: s, host: strings.TrimSuffix(strings.TrimPrefix(ts.URI, "mongodb://"), "/")}
	dir := t.TempDir()
	a.certFile = writeClientPEM(t, s.CA, filepath.Join(dir, "client.pem"), tlsClientSubject)
	a.strangerFile = writeClientPEM(t, s.CA, filepath.Join(dir, "stranger.pem"), pkix.Name{CommonName: "stranger", Organization: []string{"MongoDB"}})
	return a
}

// writeClientPEM writes a certificate ca signs for subject, followed by its
// key, to path.
func writeClientPEM(t *testing.T, ca *tlstest.CA, path string, subject pkix.Name) string {
	t.Helper()
	cert, key := ca.Issue(t, subject, false)
	tlstest.WriteFile(t, path, append(cert, key...))
	return path
}

// client connects over TLS with opts, presenting certs.
func (a *authTLS) client(t *testing.T, certs []tls.Certificate, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	return a.ts.NewClient(t, append([]*options.ClientOptions{options.Client().SetTLSConfig(a.tls.clientTLS(certs...))}, opts...)...)
}

// createUsers creates, as root "admin" (password "adminpw", which must
// exist), the users the client scripts log in as: writer (readWrite on
// app), reader (read on app), both with password "pw", and the X.509 user
// of $external named after x509Subject (readWrite on app).
func (a *authTLS) createUsers(t *testing.T) *mongo.Client {
	t.Helper()
	root := a.client(t, nil, options.Client().SetAuth(options.Credential{Username: "admin", Password: "adminpw", AuthSource: "admin"}))
	createUser(t, root, "app", "writer", bson.A{"readWrite"})
	createUser(t, root, "app", "reader", bson.A{"read"})
	run(t, root.Database("$external"), bson.D{{Key: "createUser", Value: x509Subject},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}}})
	return root
}

// createRoot creates the root user through the localhost exception.
func (a *authTLS) createRoot(t *testing.T) {
	t.Helper()
	run(t, a.client(t, nil).Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "adminpw"},
		{Key: "roles", Value: bson.A{"root"}}})
}

// TestAuthClientsSubject: the subject the drivers' certificate carries is
// named in MongoDB's form, which is what the X.509 user must be called.
func TestAuthClientsSubject(t *testing.T) {
	a := startAuthTLS(t)
	cert, err := tls.LoadX509KeyPair(a.certFile, a.certFile)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tlsnet.Subject(parsed); err != nil || got != x509Subject {
		t.Fatalf("subject %q (%v), want %q", got, err, x509Subject)
	}
}

// TestAuthClientsMongosh: the first user made with db.createUser through
// the localhost exception over --tls, then a login with -u/-p and
// --authenticationDatabase, db.auth, connectionStatus and a read-only
// user's refused write (clients/auth.js).
func TestAuthClientsMongosh(t *testing.T) {
	requireClient(t, exists(mongoshPath), "mongosh", "npm ci --prefix integration/clients (make test does it)")
	a := startAuthTLS(t)
	tlsOpts := []string{"--tls", "--tlsCAFile", a.tls.Files.CA}
	stdout, stderr := runClient(t, mongoshPath, append([]string{"mongodb://" + a.host + "/admin", "--quiet", "--eval",
		"db.createUser({user: 'admin', pwd: 'adminpw', roles: ['root']}).ok"}, tlsOpts...)...)
	if strings.TrimSpace(stdout) != "1" || stderr != "" {
		t.Fatalf("createUser through the localhost exception printed %q, stderr %q", stdout, stderr)
	}
	a.createUsers(t)
	runMongoshScriptWith(t, "mongodb://"+a.host+"/app",
		append(tlsOpts, "-u", "writer", "-p", "pw", "--authenticationDatabase", "app"), "auth.js")
}

// TestAuthClientsNodeDriver: SCRAM-SHA-1 and -256, a wrong password, a
// read-only user and MONGODB-X509 through the Node.js driver
// (clients/auth.mjs).
func TestAuthClientsNodeDriver(t *testing.T) {
	a := startAuthTLS(t)
	a.createRoot(t)
	a.createUsers(t)
	runNodeScript(t, "auth.mjs", a.host, a.tls.Files.CA, a.certFile, x509Subject, a.strangerFile)
}

// TestAuthClientsPymongo: the same through pymongo (clients/auth.py).
func TestAuthClientsPymongo(t *testing.T) {
	a := startAuthTLS(t)
	a.createRoot(t)
	a.createUsers(t)
	runPythonScript(t, "auth.py", a.host, a.tls.Files.CA, a.certFile, x509Subject, a.strangerFile)
}

// TestAuthX509GoDriver: MONGODB-X509 through the Go driver, which, like
// the others, puts the authentication in the handshake (speculative
// authentication): a certificate whose subject is a user of $external
// logs in as that user; one whose subject is no user, and a connection
// without a certificate, fail with AuthenticationFailed.
func TestAuthX509GoDriver(t *testing.T) {
	a := startAuthTLS(t)
	a.createRoot(t)
	root := a.createUsers(t)
	ctx := testCtx(t)
	x509Cred := options.Client().SetAuth(options.Credential{AuthMechanism: "MONGODB-X509"})

	c := a.client(t, []tls.Certificate{a.tls.clientCert(t, tlsClientSubject)}, x509Cred)
	if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "by", Value: "x509"}}); err != nil {
		t.Fatalf("insert as the X.509 user: %v", err)
	}
	st := run(t, c.Database("admin"), bson.D{{Key: "connectionStatus", Value: 1}})
	users, _ := st.Lookup("authInfo", "authenticatedUsers").Array().Values()
	if len(users) != 1 || users[0].Document().Lookup("user").StringValue() != x509Subject ||
		users[0].Document().Lookup("db").StringValue() != "$external" {
		t.Fatalf("authenticatedUsers = %v, want %s@$external", users, x509Subject)
	}
	// The user's roles hold: readWrite on app, nothing elsewhere.
	_, err := c.Database("other").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantCode(t, err, codeUnauthorized)
	// The login went through hello's speculativeAuthenticate.
	status := run(t, root.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	spec := status.Lookup("security", "authentication", "mechanisms", "MONGODB-X509", "speculativeAuthenticate", "successful")
	if n, ok := spec.AsInt64OK(); !ok || n < 1 {
		t.Fatalf("speculative X.509 logins: %v, want at least 1; %v", spec, status.Lookup("security"))
	}

	// A certificate of a subject no user is named after.
	stranger := a.client(t, []tls.Certificate{a.tls.clientCert(t, pkix.Name{CommonName: "stranger"})}, x509Cred)
	wantAuthFailed(t, stranger.Ping(ctx, nil))
	// No certificate at all.
	none := a.client(t, nil, x509Cred)
	wantAuthFailed(t, none.Ping(ctx, nil))
	// A user named for another certificate's subject.
	other := a.client(t, []tls.Certificate{a.tls.clientCert(t, pkix.Name{CommonName: "stranger"})},
		options.Client().SetAuth(options.Credential{AuthMechanism: "MONGODB-X509", Username: x509Subject}))
	wantAuthFailed(t, other.Ping(ctx, nil))
	if n := a.ts.Logs.FilterMessage("authentication failed").Len(); n < 3 {
		t.Fatalf("%d failed logins logged, want 3", n)
	}
}

// wantAuthFailed requires err to be AuthenticationFailed (18), which the
// Go driver reports inside its connection error.
func wantAuthFailed(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("authenticated, want AuthenticationFailed")
	}
	if errCode(err) != 18 && !strings.Contains(err.Error(), "(AuthenticationFailed)") {
		t.Fatalf("got %v, want AuthenticationFailed (18)", err)
	}
}

// TestAuthSpeculativeScram: the Go driver begins SCRAM-SHA-256 in hello and
// finishes it with saslContinue; serverStatus counts the login as
// speculative, as MongoDB does.
func TestAuthSpeculativeScram(t *testing.T) {
	ts, root := startAuthServer(t)
	createUser(t, root, "app", "u", bson.A{"read"})
	c := authClient(t, ts, "u", "pw", "app", "SCRAM-SHA-256")
	run(t, c.Database("app"), bson.D{{Key: "ping", Value: 1}})
	status := run(t, root.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	spec := status.Lookup("security", "authentication", "mechanisms", "SCRAM-SHA-256", "speculativeAuthenticate", "successful")
	if n, ok := spec.AsInt64OK(); !ok || n < 1 {
		t.Fatalf("speculative SCRAM-SHA-256 logins: %v, want at least 1", spec)
	}
}
