package integration

import (
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// What mongodump and mongorestore need to carry users and roles: the auth
// schema version, and _mergeAuthzCollections, through which mongorestore
// loads users and roles from temporary collections of admin.

// TestAuthSchemaVersion: getParameter says 5, and admin.system.version
// holds {_id: "authSchema", currentVersion: 5} once a user exists, as
// mongodump --dumpDbUsersAndRoles checks.
func TestAuthSchemaVersion(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	admin := ts.Client.Database("admin")
	reply := run(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "authSchemaVersion", Value: 1}})
	if v, ok := reply.Lookup("authSchemaVersion").Int32OK(); !ok || v != 5 {
		t.Fatalf("authSchemaVersion = %v, want 5", reply.Lookup("authSchemaVersion"))
	}
	version := admin.Collection("system.version")
	if n, err := version.CountDocuments(ctx, bson.D{{Key: "_id", Value: "authSchema"}}); err != nil || n != 0 {
		t.Fatalf("authSchema documents before any user: %d (%v), want 0", n, err)
	}
	run(t, ts.Client.Database("app"), bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	var doc bson.M
	if err := version.FindOne(ctx, bson.D{{Key: "_id", Value: "authSchema"}}).Decode(&doc); err != nil {
		t.Fatalf("authSchema document after createUser: %v", err)
	}
	if doc["currentVersion"] != int32(5) {
		t.Fatalf("authSchema document %v, want currentVersion 5", doc)
	}
}

// authDocsOf returns the documents of admin.<coll> of db, as mongodump
// reads them.
func authDocsOf(t *testing.T, root *mongo.Client, coll, db string) []any {
	t.Helper()
	cur, err := root.Database("admin").Collection(coll).Find(testCtx(t), bson.D{{Key: "db", Value: db}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(testCtx(t), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}

// loadTemp replaces admin.<coll> with docs, as mongorestore fills its
// temporary collections.
func loadTemp(t *testing.T, root *mongo.Client, coll string, docs []any) {
	t.Helper()
	c := root.Database("admin").Collection(coll)
	if err := c.Drop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, c, docs...)
}

func merge(db string, drop bool) bson.D {
	return bson.D{{Key: "_mergeAuthzCollections", Value: 1}, {Key: "tempUsersCollection", Value: "admin.tempusers"},
		{Key: "tempRolesCollection", Value: "admin.temproles"}, {Key: "drop", Value: drop}, {Key: "db", Value: db}}
}

// TestAuthMergeAuthzCollections: MongoDB's semantics of mongorestore's
// merge. Without drop, users and roles are added and existing ones kept;
// with drop, those of the database are replaced and the ones missing from
// the dump dropped; db limits the merge to one database's users and roles;
// the users' credentials come back with them.
func TestAuthMergeAuthzCollections(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	admin := root.Database("admin")
	app := root.Database("app")
	createUser(t, root, "app", "u1", bson.A{"read"})
	createUser(t, root, "shop", "s1", bson.A{"read"})
	run(t, app, bson.D{{Key: "createRole", Value: "r1"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"read"}}})
	appUsers, shopUsers := authDocsOf(t, root, "system.users", "app"), authDocsOf(t, root, "system.users", "shop")
	appRoles := authDocsOf(t, root, "system.roles", "app")
	loadTemp(t, root, "tempusers", append(appUsers, shopUsers...))
	loadTemp(t, root, "temproles", appRoles)
	logsIn := func(user, pwd, db string) bool {
		t.Helper()
		return authClient(t, ts, user, pwd, db, "").Ping(ctx, nil) == nil
	}

	// Lost users of app come back with their credentials and roles; shop's
	// user in the same temporary collection is left out.
	run(t, app, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	run(t, app, bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	run(t, root.Database("shop"), bson.D{{Key: "dropUser", Value: "s1"}})
	run(t, admin, merge("app", false))
	if !logsIn("u1", "pw", "app") {
		t.Fatal("u1 does not log in after the merge")
	}
	info := run(t, app, bson.D{{Key: "rolesInfo", Value: "r1"}})
	if roles, _ := info.Lookup("roles").Array().Values(); len(roles) != 1 {
		t.Fatalf("r1 not merged: %v", info)
	}
	if logsIn("s1", "pw", "shop") {
		t.Fatal("a user of shop was merged into app")
	}

	// Without drop, an existing user is kept as it is.
	run(t, app, bson.D{{Key: "updateUser", Value: "u1"}, {Key: "pwd", Value: "new"}})
	run(t, admin, merge("app", false))
	if !logsIn("u1", "new", "app") {
		t.Fatal("merge without drop replaced an existing user")
	}

	// With drop, app's users are those of the dump: u1 as it was, and u2,
	// which the dump lacks, dropped. Other databases' users stay.
	createUser(t, root, "app", "u2", bson.A{"read"})
	createUser(t, root, "other", "o1", bson.A{"read"})
	run(t, admin, merge("app", true))
	if !logsIn("u1", "pw", "app") || logsIn("u1", "new", "app") {
		t.Fatal("merge with drop did not replace u1")
	}
	if logsIn("u2", "pw", "app") {
		t.Fatal("merge with drop kept u2, which the dump lacks")
	}
	if !logsIn("o1", "pw", "other") {
		t.Fatal("merge of app dropped a user of another database")
	}

	// db "" merges every database's.
	run(t, admin, merge("", false))
	if !logsIn("s1", "pw", "shop") {
		t.Fatal("merge of every database left out s1")
	}

	// Neither collection named.
	err := admin.RunCommand(ctx, bson.D{{Key: "_mergeAuthzCollections", Value: 1}, {Key: "drop", Value: false}, {Key: "db", Value: ""}}).Err()
	wantCode(t, err, 2) // BadValue

	// It needs user administration on every database, as in MongoDB: a
	// readWrite user may fill the temporary collections but not merge them.
	createUser(t, root, "admin", "rw", bson.A{"readWriteAnyDatabase"})
	rw := authClient(t, ts, "rw", "pw", "admin", "")
	wantCode(t, rw.Database("admin").RunCommand(ctx, merge("app", false)).Err(), codeUnauthorized)
	// The restore role may.
	createUser(t, root, "admin", "restorer", bson.A{"restore"})
	restorer := authClient(t, ts, "restorer", "pw", "admin", "")
	run(t, restorer.Database("admin"), merge("app", false))
}

// TestToolsAuthDumpRestore runs mongodump and mongorestore from the
// directory LETHE_MONGO_TOOLS names against a server with access control:
// one database with its users and roles (--dumpDbUsersAndRoles,
// --restoreDbUsersAndRoles), then everything (--drop).
func TestToolsAuthDumpRestore(t *testing.T) {
	dir := os.Getenv("LETHE_MONGO_TOOLS")
	if dir == "" {
		t.Skip("LETHE_MONGO_TOOLS is not set: it names a directory holding mongodump and mongorestore, which this test runs")
	}
	mongodump, mongorestore := filepath.Join(dir, "mongodump"), filepath.Join(dir, "mongorestore")
	if !exists(mongodump) || !exists(mongorestore) {
		t.Fatalf("LETHE_MONGO_TOOLS=%s holds no mongodump and mongorestore", dir)
	}
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	creds := func(ts *testServer, user, pwd string) []string {
		return []string{"--uri", ts.URI, "--username", user, "--password", pwd, "--authenticationDatabase", "admin"}
	}
	app := root.Database("app")
	mustInsert(t, app.Collection("items"), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	createUser(t, root, "app", "appuser", bson.A{"readWrite"})
	run(t, app, bson.D{{Key: "createRole", Value: "itemsReader"}, {Key: "roles", Value: bson.A{}},
		{Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "app"}, {Key: "collection", Value: "items"}}},
			{Key: "actions", Value: bson.A{"find"}}}}}})
	checkApp := func(ts *testServer, root *mongo.Client) {
		t.Helper()
		c := authClient(t, ts, "appuser", "pw", "app", "")
		if n, err := c.Database("app").Collection("items").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
			t.Fatalf("appuser counts %d items (%v), want 2", n, err)
		}
		info := run(t, root.Database("app"), bson.D{{Key: "rolesInfo", Value: "itemsReader"}})
		if roles, _ := info.Lookup("roles").Array().Values(); len(roles) != 1 {
			t.Fatalf("itemsReader not restored: %v", info)
		}
	}

	// One database with its users and roles, by users holding the backup
	// and restore roles.
	createUser(t, root, "admin", "backupUser", bson.A{"backup"})
	createUser(t, root, "admin", "restoreUser", bson.A{"restore"})
	out := t.TempDir()
	runClient(t, mongodump, append(creds(ts, "backupUser", "pw"), "--db", "app", "--dumpDbUsersAndRoles", "--out", out)...)
	run(t, app, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	run(t, app, bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	run(t, app, bson.D{{Key: "dropDatabase", Value: 1}})
	runClient(t, mongorestore, append(creds(ts, "restoreUser", "pw"), "--db", "app", "--restoreDbUsersAndRoles", filepath.Join(out, "app"))...)
	checkApp(ts, root)

	// Everything, into another server whose root has the same name.
	all := t.TempDir()
	runClient(t, mongodump, append(creds(ts, "admin", "adminpw"), "--out", all)...)
	ts2, root2 := startAuthServer(t)
	runClient(t, mongorestore, append(creds(ts2, "admin", "adminpw"), "--drop", all)...)
	checkApp(ts2, root2)
}
