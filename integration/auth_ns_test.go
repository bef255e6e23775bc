package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestAuthInvalidNamespaceIsNotUnauthorized checks that with access control
// a command naming an empty or invalid collection fails with
// InvalidNamespace (73), for root and for a user without privileges alike:
// MongoDB parses a command, namespace included, before it checks
// authorization (src/mongo/db/service_entry_point_common.cpp).
func TestAuthInvalidNamespaceIsNotUnauthorized(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "reader", bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}})
	reader := authClient(t, ts, "reader", "pw", "app", "")
	for _, c := range []struct {
		name string
		cmd  bson.D
	}{
		{"find empty", bson.D{{Key: "find", Value: ""}}},
		{"insert empty", bson.D{{Key: "insert", Value: ""}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}}},
		{"create empty", bson.D{{Key: "create", Value: ""}}},
		{"drop dollar", bson.D{{Key: "drop", Value: "a$b"}}},
		{"createIndexes empty", bson.D{{Key: "createIndexes", Value: ""}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}}},
		{"count number", bson.D{{Key: "count", Value: 5}}},
		{"explain find empty", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: ""}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, root.Database("app").RunCommand(ctx, c.cmd).Err(), 73)
			wantCode(t, reader.Database("app").RunCommand(ctx, c.cmd).Err(), 73)
		})
	}
	// A valid namespace the user may not write is still Unauthorized.
	err := reader.Database("app").RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}}).Err()
	wantCode(t, err, codeUnauthorized)
}

// TestAuthLocalhostExceptionOnlyInAdmin checks that the localhost exception
// creates only the first user or role, and only in admin: MongoDB's
// documentation (docs/core/localhost-exception) has the first user made in
// admin and ends the exception with the first user or role. A first user in
// another database, which could administer nothing, is refused and leaves
// the exception in place.
func TestAuthLocalhostExceptionOnlyInAdmin(t *testing.T) {
	ts := startServer(t, withAuth())
	ctx := testCtx(t)
	anon := ts.Client
	err := anon.Database("app").RunCommand(ctx, bson.D{{Key: "createUser", Value: "appuser"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}}}).Err()
	wantCode(t, err, codeUnauthorized)
	err = anon.Database("app").RunCommand(ctx, bson.D{{Key: "createRole", Value: "approle"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}).Err()
	wantCode(t, err, codeUnauthorized)
	// The exception is still there for the first user in admin.
	run(t, anon.Database("admin"), bson.D{{Key: "createUser", Value: "first"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}})
	root := authClient(t, ts, "first", "pw", "admin", "")
	run(t, root.Database("admin"), bson.D{{Key: "ping", Value: 1}})

	// A first role ends the exception too.
	ts2 := startServer(t, withAuth())
	run(t, ts2.Client.Database("admin"), bson.D{{Key: "createRole", Value: "ops"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	err = ts2.Client.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "late"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}}).Err()
	wantCode(t, err, codeUnauthorized)
}
