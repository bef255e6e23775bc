package integration

import (
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/server"
)

// Access control through the Go driver: the localhost exception, SCRAM
// with both mechanisms, what an unauthenticated client may do, and that
// users and their privileges follow every change.

const codeUnauthorized = 13

// withAuth turns access control on (mongod's --auth).
func withAuth() serverOption {
	return func(c *server.Config) { c.Auth = true }
}

// startAuthServer starts a server with access control and creates, through
// the localhost exception, the root user "admin" (password "adminpw") in
// admin. It returns the server and a client authenticated as that user.
func startAuthServer(t *testing.T) (*testServer, *mongo.Client) {
	t.Helper()
	ts := startServer(t, withAuth())
	run(t, ts.Client.Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "adminpw"},
		{Key: "roles", Value: bson.A{"root"}}})
	return ts, authClient(t, ts, "admin", "adminpw", "admin", "")
}

// authClient connects as user@db with mech ("" lets the driver choose).
func authClient(t *testing.T, ts *testServer, user, pwd, db, mech string) *mongo.Client {
	t.Helper()
	cred := options.Credential{Username: user, Password: pwd, AuthSource: db, AuthMechanism: mech}
	return ts.NewClient(t, options.Client().SetAuth(cred))
}

// createUser creates user (password "pw") in db with roles, as root.
func createUser(t *testing.T, root *mongo.Client, db, user string, roles bson.A, extra ...bson.E) {
	t.Helper()
	cmd := bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: roles}}
	run(t, root.Database(db), append(cmd, extra...))
}

func TestAuthUnauthenticatedGetsUnauthorized(t *testing.T) {
	ts, _ := startAuthServer(t)
	ctx := testCtx(t)
	anon := ts.NewClient(t)
	// The handshake and the commands MongoDB answers for anyone work.
	for _, cmd := range []string{"hello", "ping", "buildInfo", "connectionStatus"} {
		run(t, anon.Database("admin"), bson.D{{Key: cmd, Value: 1}})
	}
	// Everything else is refused with 13.
	_, err := anon.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantCode(t, err, codeUnauthorized)
	_, err = anon.Database("app").Collection("c").Find(ctx, bson.D{})
	wantCode(t, err, codeUnauthorized)
	for _, cmd := range []bson.D{
		{{Key: "listDatabases", Value: 1}},
		{{Key: "serverStatus", Value: 1}},
		{{Key: "listCollections", Value: 1}},
		{{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}},
		{{Key: "usersInfo", Value: 1}},
		{{Key: "advanceClock", Value: 1}},
		{{Key: "getParameter", Value: "*"}},
		{{Key: "setParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: false}},
		{{Key: "shutdown", Value: 1}},
		{{Key: "fsync", Value: 1}},
		{{Key: "currentOp", Value: 1}},
		{{Key: "getLog", Value: "global"}},
	} {
		err := anon.Database("admin").RunCommand(ctx, cmd).Err()
		if errCode(err) != codeUnauthorized {
			t.Errorf("%v without authentication: got %v, want code 13", cmd, err)
		}
	}
	// admin.system.users is not readable without viewUser.
	_, err = anon.Database("admin").Collection("system.users").Find(ctx, bson.D{})
	wantCode(t, err, codeUnauthorized)
}

func TestAuthLocalhostException(t *testing.T) {
	ts := startServer(t, withAuth())
	ctx := testCtx(t)
	anon := ts.Client
	// With no user yet, a loopback client may create the first user and
	// nothing else.
	_, err := anon.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantCode(t, err, codeUnauthorized)
	wantCode(t, anon.Database("admin").RunCommand(ctx, bson.D{{Key: "usersInfo", Value: 1}}).Err(), codeUnauthorized)
	run(t, anon.Database("admin"), bson.D{{Key: "createUser", Value: "first"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}})
	// Once it exists, the exception is gone.
	err = anon.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{"root"}}}).Err()
	wantCode(t, err, codeUnauthorized)
	root := authClient(t, ts, "first", "pw", "admin", "")
	if _, err := root.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestAuthBothScramMechanisms(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "both", bson.A{"readWrite"})
	createUser(t, root, "app", "sha1only", bson.A{"readWrite"}, bson.E{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}})
	createUser(t, root, "app", "sha256only", bson.A{"readWrite"}, bson.E{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}})
	ok := func(user, mech string) {
		t.Helper()
		c := authClient(t, ts, user, "pw", "app", mech)
		if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "by", Value: user + " " + mech}}); err != nil {
			t.Fatalf("%s with %q: %v", user, mech, err)
		}
	}
	fails := func(user, pwd, mech, want string) {
		t.Helper()
		c := authClient(t, ts, user, pwd, "app", mech)
		err := c.Ping(ctx, nil)
		if err == nil {
			t.Fatalf("%s/%s with %q authenticated", user, pwd, mech)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%s with %q: %v, want %s", user, mech, err, want)
		}
	}
	ok("both", "SCRAM-SHA-1")
	ok("both", "SCRAM-SHA-256")
	ok("both", "") // the driver asks saslSupportedMechs and takes SHA-256
	ok("sha1only", "SCRAM-SHA-1")
	ok("sha1only", "") // saslSupportedMechs says SHA-1 only
	ok("sha256only", "SCRAM-SHA-256")
	// A mechanism the user has no credentials for: MongoDB's
	// MechanismUnavailable (334), at the first step.
	fails("sha1only", "pw", "SCRAM-SHA-256", "MechanismUnavailable")
	fails("sha256only", "pw", "SCRAM-SHA-1", "MechanismUnavailable")
	// A wrong password and an unknown user look alike.
	fails("both", "wrong", "SCRAM-SHA-256", "(AuthenticationFailed) Authentication failed.")
	fails("both", "wrong", "SCRAM-SHA-1", "(AuthenticationFailed) Authentication failed.")
	fails("nobody", "pw", "SCRAM-SHA-256", "(AuthenticationFailed) Authentication failed.")
	// Authenticating against another database than the user's fails.
	c := authClient(t, ts, "both", "pw", "other", "SCRAM-SHA-256")
	if err := c.Ping(ctx, nil); err == nil {
		t.Fatal("authenticated against the wrong database")
	}
	// Failures are logged with user, address and mechanism and counted.
	entries := ts.Logs.FilterMessage("authentication failed").All()
	if len(entries) < 6 {
		t.Fatalf("%d failures logged, want at least 6", len(entries))
	}
	for _, e := range entries {
		m := e.ContextMap()
		if m["user"] == nil || m["remote"] == nil || m["mechanism"] == nil || e.Level != zapcore.WarnLevel {
			t.Fatalf("failure log lacks user, remote or mechanism: %v", m)
		}
		for _, v := range m {
			if s, ok := v.(string); ok && (s == "wrong" || strings.Contains(s, "wrong")) {
				t.Fatalf("the log holds the password: %v", m)
			}
		}
	}
	status := run(t, root.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	failed := status.Lookup("security", "authentication", "mechanisms", "SCRAM-SHA-256", "authenticate", "failed")
	if n, ok := failed.AsInt64OK(); !ok || n < 3 {
		t.Fatalf("serverStatus counts %v SCRAM-SHA-256 failures, want at least 3", failed)
	}
}

func TestAuthConnectionStatusAndLogout(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "reader", bson.A{"read"})
	c := authClient(t, ts, "reader", "pw", "app", "")
	st := run(t, c.Database("admin"), bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}})
	users := st.Lookup("authInfo", "authenticatedUsers").Array()
	if vals, _ := users.Values(); len(vals) != 1 || vals[0].Document().Lookup("user").StringValue() != "reader" ||
		vals[0].Document().Lookup("db").StringValue() != "app" {
		t.Fatalf("authenticatedUsers = %v", users)
	}
	roles := st.Lookup("authInfo", "authenticatedUserRoles").Array()
	if vals, _ := roles.Values(); len(vals) != 1 || vals[0].Document().Lookup("role").StringValue() != "read" {
		t.Fatalf("authenticatedUserRoles = %v", roles)
	}
	if privs, _ := st.Lookup("authInfo", "authenticatedUserPrivileges").Array().Values(); len(privs) == 0 {
		t.Fatal("no privileges shown")
	}
	// logout on one connection: the next command on it is unauthenticated.
	// The pool has several connections, so this runs on a session-less
	// single-connection client.
	single := ts.NewClient(t, options.Client().SetAuth(options.Credential{Username: "reader", Password: "pw", AuthSource: "app"}).SetMaxPoolSize(1))
	run(t, single.Database("app"), bson.D{{Key: "logout", Value: 1}})
	_, err := single.Database("app").Collection("c").Find(ctx, bson.D{})
	wantCode(t, err, codeUnauthorized)
}

func TestAuthPrivilegesFollowChanges(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "u", bson.A{"read"})
	c := authClient(t, ts, "u", "pw", "app", "")
	coll := c.Database("app").Collection("c")
	_, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	wantCode(t, err, codeUnauthorized)
	var ce mongo.CommandError
	if errors.As(err, &ce) && !strings.Contains(ce.Message, "insert") {
		t.Fatalf("the error does not name the action: %v", ce.Message)
	}
	run(t, root.Database("app"), bson.D{{Key: "grantRolesToUser", Value: "u"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("after grantRolesToUser: %v", err)
	}
	// A user-defined role's privileges count too, and follow its changes.
	run(t, root.Database("app"), bson.D{{Key: "createRole", Value: "indexer"},
		{Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "app"}, {Key: "collection", Value: "c"}}},
			{Key: "actions", Value: bson.A{"dropIndex"}}}}}, {Key: "roles", Value: bson.A{}}})
	run(t, root.Database("app"), bson.D{{Key: "revokeRolesFromUser", Value: "u"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	run(t, root.Database("app"), bson.D{{Key: "grantRolesToUser", Value: "u"}, {Key: "roles", Value: bson.A{"indexer"}}})
	_, err = coll.InsertOne(ctx, bson.D{{Key: "x", Value: 2}})
	wantCode(t, err, codeUnauthorized)
	if err := c.Database("app").RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "*"}}).Err(); err != nil {
		t.Fatalf("dropIndexes through a user-defined role: %v", err)
	}
	// A dropped user's connections lose every privilege.
	run(t, root.Database("app"), bson.D{{Key: "dropUser", Value: "u"}})
	_, err = coll.Find(ctx, bson.D{})
	wantCode(t, err, codeUnauthorized)
}

func TestAuthUsersSurviveRestart(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "u", bson.A{"readWrite"})
	ts.Restart(t)
	c := authClient(t, ts, "u", "pw", "app", "SCRAM-SHA-256")
	if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	_, err := ts.Client.Database("app").Collection("c").Find(ctx, bson.D{})
	wantCode(t, err, codeUnauthorized)
}

func TestAuthCursorBelongsToItsUser(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	for i := range 10 {
		mustInsert(t, root.Database("app").Collection("c"), bson.D{{Key: "_id", Value: int32(i)}})
	}
	createUser(t, root, "app", "a", bson.A{"read"})
	createUser(t, root, "app", "b", bson.A{"read"})
	a := authClient(t, ts, "a", "pw", "app", "")
	b := authClient(t, ts, "b", "pw", "app", "")
	reply := run(t, a.Database("app"), bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}})
	id := reply.Lookup("cursor", "id").Int64()
	err := b.Database("app").RunCommand(ctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}).Err()
	wantCode(t, err, codeUnauthorized)
	err = b.Database("app").RunCommand(ctx, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}}).Err()
	wantCode(t, err, codeUnauthorized)
	run(t, a.Database("app"), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}})
}

func TestAuthListDatabasesFiltered(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	mustInsert(t, root.Database("app").Collection("c"), bson.D{{Key: "x", Value: 1}})
	mustInsert(t, root.Database("other").Collection("c"), bson.D{{Key: "x", Value: 1}})
	createUser(t, root, "app", "reader", bson.A{"read"})
	createUser(t, root, "admin", "all", bson.A{"readAnyDatabase"})
	names := func(c *mongo.Client) []string {
		t.Helper()
		n, err := c.ListDatabaseNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := names(authClient(t, ts, "reader", "pw", "app", "")); len(got) != 1 || got[0] != "app" {
		t.Fatalf("read on app lists %v, want [app]", got)
	}
	got := names(authClient(t, ts, "all", "pw", "admin", ""))
	if !containsAll(got, "app", "other") {
		t.Fatalf("readAnyDatabase lists %v, want app and other among them", got)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// TestAuthMechanismsRestricted: with authenticationMechanisms set to
// SCRAM-SHA-256 alone, SCRAM-SHA-1 is turned away with
// MechanismUnavailable, saslSupportedMechs offers only what is enabled,
// and the driver's own choice still logs in.
func TestAuthMechanismsRestricted(t *testing.T) {
	ts := startServer(t, withAuth(), func(c *server.Config) { c.AuthMechanisms = []auth.Mechanism{auth.ScramSHA256} })
	ctx := testCtx(t)
	run(t, ts.Client.Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "adminpw"},
		{Key: "roles", Value: bson.A{"root"}}})
	root := authClient(t, ts, "admin", "adminpw", "admin", "")
	createUser(t, root, "app", "u", bson.A{"readWrite"})
	err := authClient(t, ts, "u", "pw", "app", "SCRAM-SHA-1").Ping(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "MechanismUnavailable") {
		t.Fatalf("SCRAM-SHA-1 when only SCRAM-SHA-256 is enabled: %v", err)
	}
	if err := authClient(t, ts, "u", "pw", "app", "").Ping(ctx, nil); err != nil {
		t.Fatalf("the driver's choice: %v", err)
	}
	hello := run(t, ts.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "app.u"}})
	if mechs, _ := hello.Lookup("saslSupportedMechs").Array().Values(); len(mechs) != 1 || mechs[0].StringValue() != "SCRAM-SHA-256" {
		t.Fatalf("saslSupportedMechs %v, want [SCRAM-SHA-256]", hello.Lookup("saslSupportedMechs"))
	}
	param := run(t, root.Database("admin"), bson.D{{Key: "getParameter", Value: 1}, {Key: "authenticationMechanisms", Value: 1}})
	if got := param.Lookup("authenticationMechanisms").String(); got != `["SCRAM-SHA-256"]` {
		t.Fatalf("authenticationMechanisms %s", got)
	}
}
