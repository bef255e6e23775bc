package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The user management commands, without access control (as on mongod
// started without --auth, where they work for any client).

// runErr runs cmd on db and returns its error.
func runErr(db *mongo.Database, cmd bson.D) error {
	return db.RunCommand(context.Background(), cmd).Err()
}

// usersOf returns the users array of a usersInfo reply.
func usersOf(t *testing.T, reply bson.Raw) []bson.Raw {
	t.Helper()
	return docsOf(t, reply, "users")
}

func docsOf(t *testing.T, reply bson.Raw, field string) []bson.Raw {
	t.Helper()
	vals, err := reply.Lookup(field).Array().Values()
	if err != nil {
		t.Fatalf("%s of %s: %v", field, reply, err)
	}
	out := make([]bson.Raw, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

// roleNames lists a roles array as "role@db".
func roleNames(t *testing.T, arr bson.RawValue) []string {
	t.Helper()
	vals, err := arr.Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vals {
		d := v.Document()
		names = append(names, d.Lookup("role").StringValue()+"@"+d.Lookup("db").StringValue())
	}
	slices.Sort(names)
	return names
}

func TestUserMgmtCreateUserStoredShape(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	test := ts.Client.Database("test")
	run(t, test, bson.D{{Key: "createUser", Value: "alice"}, {Key: "pwd", Value: "s3cret"},
		{Key: "roles", Value: bson.A{"readWrite", bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "reporting"}}}},
		{Key: "customData", Value: bson.D{{Key: "employee", Value: int32(7)}}}})

	// mongodump reads the stored documents as they are.
	doc, err := ts.Client.Database("admin").Collection("system.users").FindOne(ctx, bson.D{{Key: "user", Value: "alice"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if id := doc.Lookup("_id").StringValue(); id != "test.alice" {
		t.Errorf("_id %q", id)
	}
	if st, _, ok := doc.Lookup("userId").BinaryOK(); !ok || st != 4 {
		t.Errorf("userId %s", doc.Lookup("userId"))
	}
	if db := doc.Lookup("db").StringValue(); db != "test" {
		t.Errorf("db %q", db)
	}
	if got := roleNames(t, doc.Lookup("roles")); !slices.Equal(got, []string{"read@reporting", "readWrite@test"}) {
		t.Errorf("roles %v", got)
	}
	for mech, iters := range map[string]int32{"SCRAM-SHA-1": 10000, "SCRAM-SHA-256": 15000} {
		c, ok := doc.Lookup("credentials", mech).DocumentOK()
		if !ok {
			t.Fatalf("no %s credentials in %s", mech, doc)
		}
		if n := c.Lookup("iterationCount").Int32(); n != iters {
			t.Errorf("%s iterationCount %d, want %d", mech, n, iters)
		}
		for _, f := range []string{"salt", "storedKey", "serverKey"} {
			s, ok := c.Lookup(f).StringValueOK()
			if _, err := base64.StdEncoding.DecodeString(s); !ok || err != nil || s == "" {
				t.Errorf("%s %s is not a base64 string: %s", mech, f, c.Lookup(f))
			}
		}
	}
	if bytes.Contains(doc, []byte("s3cret")) {
		t.Error("the password is stored")
	}

	// A second user of the same name is 51003; one of another database is
	// another user.
	wantCode(t, runErr(test, bson.D{{Key: "createUser", Value: "alice"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}), 51003)
	run(t, ts.Client.Database("other"), bson.D{{Key: "createUser", Value: "alice"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}})
	n, err := ts.Client.Database("admin").Collection("system.users").CountDocuments(ctx, bson.D{})
	if err != nil || n != 2 {
		t.Errorf("%d users (%v), want 2", n, err)
	}
	idx, err := ts.Client.Database("admin").Collection("system.users").Indexes().ListSpecifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(idx, func(s mongo.IndexSpecification) bool { return s.Name == "user_1_db_1" && s.Unique != nil && *s.Unique }) {
		t.Errorf("no unique user_1_db_1 index: %+v", idx)
	}
}

func TestUserMgmtCreateUserErrors(t *testing.T) {
	ts := startServer(t)
	test := ts.Client.Database("test")
	user := func(extra ...bson.E) bson.D {
		return append(bson.D{{Key: "createUser", Value: "bob"}}, extra...)
	}
	pwd := bson.E{Key: "pwd", Value: "pw"}
	noRoles := bson.E{Key: "roles", Value: bson.A{}}
	for name, tc := range map[string]struct {
		db   string
		cmd  bson.D
		code int
	}{
		"no pwd":               {"test", user(noRoles), 2},
		"empty pwd":            {"test", user(bson.E{Key: "pwd", Value: ""}, noRoles), 2},
		"no roles":             {"test", user(pwd), 40414},
		"pwd on $external":     {"$external", user(pwd, noRoles), 2},
		"local":                {"local", user(pwd, noRoles), 2},
		"NUL in name":          {"test", bson.D{{Key: "createUser", Value: "a\x00b"}, pwd, noRoles}, 2},
		"unknown role":         {"test", user(pwd, bson.E{Key: "roles", Value: bson.A{"nosuch"}}), 31},
		"admin role elsewhere": {"test", user(pwd, bson.E{Key: "roles", Value: bson.A{"root"}}), 31},
		"bad role entry":       {"test", user(pwd, bson.E{Key: "roles", Value: bson.A{int32(1)}}), 2},
		"unknown mechanism":    {"test", user(pwd, noRoles, bson.E{Key: "mechanisms", Value: bson.A{"MD5"}}), 2},
		"empty mechanisms":     {"test", user(pwd, noRoles, bson.E{Key: "mechanisms", Value: bson.A{}}), 2},
		"sha256 predigested":   {"test", user(pwd, noRoles, bson.E{Key: "digestPassword", Value: false}), 2},
		"unknown field":        {"test", user(pwd, noRoles, bson.E{Key: "colour", Value: "red"}), 40415},
	} {
		if err := runErr(ts.Client.Database(tc.db), tc.cmd); errCode(err) != tc.code {
			t.Errorf("%s: got %v, want code %d", name, err, tc.code)
		}
	}
	// A password SASLprep refuses (a control character) is BadValue, and
	// the error does not quote it.
	err := runErr(test, user(bson.E{Key: "pwd", Value: "se\u0007cret"}, noRoles))
	wantCode(t, err, 2)
	if strings.Contains(err.Error(), "se\u0007cret") {
		t.Errorf("the error quotes the password: %v", err)
	}
	if n := len(usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: 1}}))); n != 0 {
		t.Errorf("%d users after failed createUser", n)
	}

	// $external users have no password; mechanisms narrow the credentials.
	run(t, ts.Client.Database("$external"), bson.D{{Key: "createUser", Value: "CN=client,O=Lethe"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "test"}}}}})
	run(t, test, user(pwd, noRoles, bson.E{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}}))
	u := usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "bob"}, {Key: "showCredentials", Value: true}}))[0]
	if _, ok := u.Lookup("credentials", "SCRAM-SHA-1").DocumentOK(); ok {
		t.Errorf("SCRAM-SHA-1 credentials despite mechanisms: %s", u)
	}
	if got := u.Lookup("mechanisms").String(); got != `["SCRAM-SHA-256"]` {
		t.Errorf("mechanisms %s", got)
	}

	// A password the client digested (hex MD5 of "user:mongo:pwd") is
	// accepted for SCRAM-SHA-1 alone.
	run(t, test, bson.D{{Key: "createUser", Value: "legacy"}, {Key: "pwd", Value: "0b4b0fb4c6b1a5bd93d1b9b4d3a6c1c3"}, noRoles,
		{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}}, {Key: "digestPassword", Value: false}})
	u = usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "legacy"}}))[0]
	if got := u.Lookup("mechanisms").String(); got != `["SCRAM-SHA-1"]` {
		t.Errorf("mechanisms of a client-digested password %s", got)
	}

	// Empty authenticationRestrictions are not stored; given ones are, and
	// usersInfo shows them only when asked.
	run(t, test, bson.D{{Key: "createUser", Value: "r1"}, pwd, noRoles, {Key: "authenticationRestrictions", Value: bson.A{}}})
	restricted := bson.A{bson.D{{Key: "clientSource", Value: bson.A{"127.0.0.1"}}}}
	run(t, test, bson.D{{Key: "createUser", Value: "r2"}, pwd, noRoles, {Key: "authenticationRestrictions", Value: restricted}})
	users := ts.Client.Database("admin").Collection("system.users")
	for name, want := range map[string]bool{"test.r1": false, "test.r2": true} {
		doc, err := users.FindOne(context.Background(), bson.D{{Key: "_id", Value: name}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := doc.LookupErr("authenticationRestrictions"); (err == nil) != want {
			t.Errorf("%s: authenticationRestrictions stored %v, want %v", name, err == nil, want)
		}
	}
	u = usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "r2"}}))[0]
	if _, err := u.LookupErr("authenticationRestrictions"); err == nil {
		t.Errorf("authenticationRestrictions shown unasked: %s", u)
	}
	u = usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "r2"}, {Key: "showAuthenticationRestrictions", Value: true}}))[0]
	if got, _ := u.Lookup("authenticationRestrictions", "0", "clientSource", "0").StringValueOK(); got != "127.0.0.1" {
		t.Errorf("showAuthenticationRestrictions: %s", u)
	}
	run(t, test, bson.D{{Key: "updateUser", Value: "r2"}, {Key: "authenticationRestrictions", Value: bson.A{}}})
	doc, err := users.FindOne(context.Background(), bson.D{{Key: "_id", Value: "test.r2"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := doc.LookupErr("authenticationRestrictions"); err == nil {
		t.Errorf("updateUser with [] kept the restrictions: %s", doc)
	}
}

func TestUserMgmtUsersInfoForms(t *testing.T) {
	ts := startServer(t)
	test, other := ts.Client.Database("test"), ts.Client.Database("other")
	for _, n := range []string{"carol", "alice", "bob"} {
		run(t, test, bson.D{{Key: "createUser", Value: n}, {Key: "pwd", Value: "pw-" + n}, {Key: "roles", Value: bson.A{"read"}},
			{Key: "customData", Value: bson.D{{Key: "n", Value: n}}}})
	}
	run(t, other, bson.D{{Key: "createUser", Value: "dave"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})

	names := func(users []bson.Raw) []string {
		var out []string
		for _, u := range users {
			out = append(out, u.Lookup("_id").StringValue())
		}
		return out
	}
	for name, tc := range map[string]struct {
		arg  any
		want []string
	}{
		"1":         {int32(1), []string{"test.alice", "test.bob", "test.carol"}},
		"name":      {"bob", []string{"test.bob"}},
		"missing":   {"nobody", nil},
		"document":  {bson.D{{Key: "user", Value: "dave"}, {Key: "db", Value: "other"}}, []string{"other.dave"}},
		"array":     {bson.A{"carol", bson.D{{Key: "user", Value: "dave"}, {Key: "db", Value: "other"}}}, []string{"other.dave", "test.carol"}},
		"forAllDBs": {bson.D{{Key: "forAllDBs", Value: true}}, []string{"test.alice", "test.bob", "test.carol", "other.dave"}},
	} {
		got := names(usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: tc.arg}})))
		want := slices.Clone(tc.want)
		if name == "array" || name == "forAllDBs" {
			slices.Sort(got)
			slices.Sort(want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("usersInfo %s: %v, want %v", name, got, want)
		}
	}

	// Credentials are hidden unless asked for; mechanisms are always there.
	u := usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "alice"}}))[0]
	if _, err := u.LookupErr("credentials"); err == nil {
		t.Errorf("credentials shown by default: %s", u)
	}
	if got := u.Lookup("mechanisms").String(); got != `["SCRAM-SHA-1","SCRAM-SHA-256"]` {
		t.Errorf("mechanisms %s", got)
	}
	if got := u.Lookup("customData", "n").StringValue(); got != "alice" {
		t.Errorf("customData %s", u.Lookup("customData"))
	}
	if got := roleNames(t, u.Lookup("roles")); !slices.Equal(got, []string{"read@test"}) {
		t.Errorf("roles %v", got)
	}
	u = usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "alice"}, {Key: "showCredentials", Value: true}, {Key: "showCustomData", Value: false}}))[0]
	if _, err := u.LookupErr("credentials", "SCRAM-SHA-256", "storedKey"); err != nil {
		t.Errorf("showCredentials: no credentials in %s", u)
	}
	if _, err := u.LookupErr("customData"); err == nil {
		t.Errorf("showCustomData false still shows customData")
	}

	// filter, and showPrivileges only for exact names.
	got := names(usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: 1}, {Key: "filter", Value: bson.D{{Key: "customData.n", Value: "bob"}}}})))
	if !slices.Equal(got, []string{"test.bob"}) {
		t.Errorf("filter: %v", got)
	}
	wantCode(t, runErr(test, bson.D{{Key: "usersInfo", Value: 1}, {Key: "showPrivileges", Value: true}}), 20)
	wantCode(t, runErr(test, bson.D{{Key: "usersInfo", Value: "bob"}, {Key: "showPrivileges", Value: true}, {Key: "filter", Value: bson.D{}}}), 20)
	u = usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "bob"}, {Key: "showPrivileges", Value: true}}))[0]
	if got := roleNames(t, u.Lookup("inheritedRoles")); !slices.Equal(got, []string{"read@test"}) {
		t.Errorf("inheritedRoles %v", got)
	}
	// With details, mechanisms take the credentials' place.
	var keys []string
	elems, _ := u.Elements()
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	if want := []string{"_id", "userId", "user", "db", "mechanisms", "customData", "roles", "inheritedRoles", "inheritedPrivileges", "inheritedAuthenticationRestrictions"}; !slices.Equal(keys, want) {
		t.Errorf("usersInfo showPrivileges keys %v, want %v", keys, want)
	}
	wantCode(t, runErr(test, bson.D{{Key: "usersInfo", Value: true}}), 2)
}

func TestUserMgmtUpdateGrantRevokeDrop(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	test := ts.Client.Database("test")
	run(t, test, bson.D{{Key: "createUser", Value: "erin"}, {Key: "pwd", Value: "one"}, {Key: "roles", Value: bson.A{"read"}}})
	stored := func() bson.Raw {
		doc, err := ts.Client.Database("admin").Collection("system.users").FindOne(ctx, bson.D{{Key: "_id", Value: "test.erin"}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	before := stored()

	// A new password is new credentials, with a new salt.
	run(t, test, bson.D{{Key: "updateUser", Value: "erin"}, {Key: "pwd", Value: "two"}, {Key: "customData", Value: bson.D{{Key: "team", Value: "ops"}}}})
	after := stored()
	if before.Lookup("credentials", "SCRAM-SHA-256", "salt").StringValue() == after.Lookup("credentials", "SCRAM-SHA-256", "salt").StringValue() {
		t.Error("updateUser pwd kept the old credentials")
	}
	if before.Lookup("userId").String() != after.Lookup("userId").String() {
		t.Error("updateUser changed the userId")
	}
	if after.Lookup("customData", "team").StringValue() != "ops" {
		t.Errorf("customData %s", after.Lookup("customData"))
	}
	// Mechanisms without a password can only narrow.
	run(t, test, bson.D{{Key: "updateUser", Value: "erin"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}}})
	if _, err := stored().LookupErr("credentials", "SCRAM-SHA-1"); err == nil {
		t.Error("mechanisms did not drop the SCRAM-SHA-1 credentials")
	}
	wantCode(t, runErr(test, bson.D{{Key: "updateUser", Value: "erin"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}}}), 2)
	wantCode(t, runErr(test, bson.D{{Key: "updateUser", Value: "erin"}}), 2)
	wantCode(t, runErr(test, bson.D{{Key: "updateUser", Value: "nobody"}, {Key: "pwd", Value: "x"}}), 11)
	wantCode(t, runErr(test, bson.D{{Key: "updateUser", Value: "erin"}, {Key: "roles", Value: bson.A{"nosuch"}}}), 31)

	// Roles: granted ones are added once, revoked ones removed.
	run(t, test, bson.D{{Key: "grantRolesToUser", Value: "erin"}, {Key: "roles", Value: bson.A{"readWrite", "read", bson.D{{Key: "role", Value: "clusterMonitor"}, {Key: "db", Value: "admin"}}}}})
	if got := roleNames(t, stored().Lookup("roles")); !slices.Equal(got, []string{"clusterMonitor@admin", "read@test", "readWrite@test"}) {
		t.Errorf("after grant: %v", got)
	}
	run(t, test, bson.D{{Key: "revokeRolesFromUser", Value: "erin"}, {Key: "roles", Value: bson.A{"read", "dbAdmin"}}})
	if got := roleNames(t, stored().Lookup("roles")); !slices.Equal(got, []string{"clusterMonitor@admin", "readWrite@test"}) {
		t.Errorf("after revoke: %v", got)
	}
	wantCode(t, runErr(test, bson.D{{Key: "grantRolesToUser", Value: "erin"}, {Key: "roles", Value: bson.A{}}}), 2)
	wantCode(t, runErr(test, bson.D{{Key: "grantRolesToUser", Value: "nobody"}, {Key: "roles", Value: bson.A{"read"}}}), 11)
	wantCode(t, runErr(test, bson.D{{Key: "grantRolesToUser", Value: "erin"}, {Key: "roles", Value: bson.A{"nosuch"}}}), 31)

	// Drops.
	wantCode(t, runErr(test, bson.D{{Key: "dropUser", Value: "nobody"}}), 11)
	run(t, test, bson.D{{Key: "dropUser", Value: "erin"}})
	wantCode(t, runErr(test, bson.D{{Key: "dropUser", Value: "erin"}}), 11)
	for _, n := range []string{"f", "g"} {
		run(t, test, bson.D{{Key: "createUser", Value: n}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	}
	run(t, ts.Client.Database("other"), bson.D{{Key: "createUser", Value: "h"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	reply := run(t, test, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	if n := reply.Lookup("n").Int32(); n != 2 {
		t.Errorf("dropAllUsersFromDatabase n = %d, want 2", n)
	}
	if n := len(usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: bson.D{{Key: "forAllDBs", Value: true}}}}))); n != 1 {
		t.Errorf("%d users left, want 1 (other.h)", n)
	}
}

func TestUserMgmtRoles(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	test := ts.Client.Database("test")
	find := bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "test"}, {Key: "collection", Value: "orders"}}}, {Key: "actions", Value: bson.A{"find"}}}
	run(t, test, bson.D{{Key: "createRole", Value: "orderReader"}, {Key: "privileges", Value: bson.A{find}}, {Key: "roles", Value: bson.A{}}})
	run(t, test, bson.D{{Key: "createRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"orderReader", "read"}}})

	doc, err := ts.Client.Database("admin").Collection("system.roles").FindOne(ctx, bson.D{{Key: "_id", Value: "test.orderReader"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if doc.Lookup("role").StringValue() != "orderReader" || doc.Lookup("db").StringValue() != "test" ||
		doc.Lookup("privileges", "0", "resource", "collection").StringValue() != "orders" ||
		doc.Lookup("privileges", "0", "actions").String() != `["find"]` {
		t.Errorf("stored role %s", doc)
	}

	for name, tc := range map[string]struct {
		cmd  bson.D
		code int
	}{
		"exists":         {bson.D{{Key: "createRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}, 51002},
		"builtin name":   {bson.D{{Key: "createRole", Value: "read"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}, 2},
		"no privileges":  {bson.D{{Key: "createRole", Value: "x"}, {Key: "roles", Value: bson.A{}}}, 40414},
		"unknown role":   {bson.D{{Key: "createRole", Value: "x"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"nosuch"}}}, 31},
		"other db priv":  {bson.D{{Key: "createRole", Value: "x"}, {Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}}, {Key: "actions", Value: bson.A{"serverStatus"}}}}}, {Key: "roles", Value: bson.A{}}}, 49},
		"other db role":  {bson.D{{Key: "createRole", Value: "x"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "other"}}}}}, 49},
		"bad privilege":  {bson.D{{Key: "createRole", Value: "x"}, {Key: "privileges", Value: bson.A{bson.D{{Key: "actions", Value: bson.A{"find"}}}}}, {Key: "roles", Value: bson.A{}}}, 9},
		"update missing": {bson.D{{Key: "updateRole", Value: "nosuch"}, {Key: "roles", Value: bson.A{}}}, 31},
		"update nothing": {bson.D{{Key: "updateRole", Value: "clerk"}}, 2},
		"update builtin": {bson.D{{Key: "updateRole", Value: "read"}, {Key: "roles", Value: bson.A{}}}, 31},
		"grant builtin":  {bson.D{{Key: "grantRolesToRole", Value: "read"}, {Key: "roles", Value: bson.A{"clerk"}}}, 2},
		"drop builtin":   {bson.D{{Key: "dropRole", Value: "read"}}, 2},
		"cycle":          {bson.D{{Key: "grantRolesToRole", Value: "orderReader"}, {Key: "roles", Value: bson.A{"clerk"}}}, 49},
		"itself":         {bson.D{{Key: "grantRolesToRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"clerk"}}}, 49},
		"drop missing":   {bson.D{{Key: "dropRole", Value: "nosuch"}}, 31},
		"grant none":     {bson.D{{Key: "grantPrivilegesToRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{}}}, 2},
		"unknown action": {bson.D{{Key: "grantPrivilegesToRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "test"}, {Key: "collection", Value: ""}}}, {Key: "actions", Value: bson.A{"fly"}}}}}}, 9},
	} {
		if err := runErr(test, tc.cmd); errCode(err) != tc.code {
			t.Errorf("%s: got %v, want code %d", name, err, tc.code)
		}
	}

	// rolesInfo: inherited roles and privileges through the graph.
	roles := docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "clerk"}, {Key: "showPrivileges", Value: true}}), "roles")
	if len(roles) != 1 {
		t.Fatalf("rolesInfo clerk: %v", roles)
	}
	clerk := roles[0]
	if clerk.Lookup("isBuiltin").Boolean() {
		t.Error("clerk isBuiltin")
	}
	if got := roleNames(t, clerk.Lookup("inheritedRoles")); !slices.Equal(got, []string{"orderReader@test", "read@test"}) {
		t.Errorf("inheritedRoles %v", got)
	}
	if got := clerk.Lookup("inheritedPrivileges", "0", "actions").String(); got != `["find"]` {
		t.Errorf("inheritedPrivileges %s", clerk.Lookup("inheritedPrivileges"))
	}
	// MongoDB's shape of a named role: the stored fields, without
	// privileges unless asked, what it inherits, then isBuiltin.
	var keys []string
	plain := docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "clerk"}, {Key: "showAuthenticationRestrictions", Value: true}}), "roles")[0]
	elems, _ := plain.Elements()
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	if want := []string{"_id", "role", "db", "roles", "authenticationRestrictions", "inheritedRoles", "inheritedAuthenticationRestrictions", "isBuiltin"}; !slices.Equal(keys, want) {
		t.Errorf("rolesInfo keys %v, want %v", keys, want)
	}
	all := docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: 1}}), "roles")
	if len(all) != 2 {
		t.Errorf("rolesInfo 1: %d roles, want 2", len(all))
	}
	withBuiltin := docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: 1}, {Key: "showBuiltinRoles", Value: true}}), "roles")
	if !slices.ContainsFunc(withBuiltin, func(r bson.Raw) bool {
		return r.Lookup("role").StringValue() == "readWrite" && r.Lookup("isBuiltin").Boolean()
	}) {
		t.Errorf("showBuiltinRoles lacks readWrite: %v", withBuiltin)
	}
	// Built-in roles bring their privileges: clerk inherits read's find on
	// the database, and read itself shows it.
	if !slices.ContainsFunc(docsOf(t, clerk, "inheritedPrivileges"), func(p bson.Raw) bool {
		return p.Lookup("resource").String() == `{"db": "test","collection": ""}` && strings.Contains(p.Lookup("actions").String(), `"find"`)
	}) {
		t.Errorf("clerk's inheritedPrivileges lack read's: %s", clerk.Lookup("inheritedPrivileges"))
	}
	read := docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "read"}, {Key: "showPrivileges", Value: true}}), "roles")
	if len(read) != 1 || !read[0].Lookup("isBuiltin").Boolean() || !strings.Contains(read[0].Lookup("privileges").String(), `"find"`) {
		t.Errorf("rolesInfo read: %v", read)
	}
	// asUserFragment: the roles as a user holding them would have them.
	frag := run(t, test, bson.D{{Key: "rolesInfo", Value: bson.A{"clerk"}}, {Key: "showPrivileges", Value: "asUserFragment"}}).Lookup("userFragment").Document()
	if got := roleNames(t, frag.Lookup("roles")); !slices.Equal(got, []string{"clerk@test"}) {
		t.Errorf("userFragment roles %v", got)
	}
	if got := roleNames(t, frag.Lookup("inheritedRoles")); !slices.Equal(got, []string{"clerk@test", "orderReader@test", "read@test"}) {
		t.Errorf("userFragment inheritedRoles %v", got)
	}
	if !strings.Contains(frag.Lookup("inheritedPrivileges").String(), `"orders"`) {
		t.Errorf("userFragment inheritedPrivileges %s", frag.Lookup("inheritedPrivileges"))
	}
	wantCode(t, runErr(test, bson.D{{Key: "rolesInfo", Value: 1}, {Key: "showPrivileges", Value: "asUserFragment"}}), 20)
	if n := len(docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "nosuch"}}), "roles")); n != 0 {
		t.Errorf("rolesInfo of a missing role: %d", n)
	}

	// Privileges: grant merges actions on a resource, revoke removes them.
	insert := bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "test"}, {Key: "collection", Value: "orders"}}}, {Key: "actions", Value: bson.A{"insert", "find"}}}
	run(t, test, bson.D{{Key: "grantPrivilegesToRole", Value: "orderReader"}, {Key: "privileges", Value: bson.A{insert}}})
	r := docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "orderReader"}, {Key: "showPrivileges", Value: true}}), "roles")[0]
	if got := r.Lookup("privileges").String(); got != `[{"resource": {"db": "test","collection": "orders"},"actions": ["find","insert"]}]` {
		t.Errorf("after grant: %s", got)
	}
	run(t, test, bson.D{{Key: "revokePrivilegesFromRole", Value: "orderReader"}, {Key: "privileges", Value: bson.A{find}}})
	r = docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "orderReader"}, {Key: "showPrivileges", Value: true}}), "roles")[0]
	if got := r.Lookup("privileges", "0", "actions").String(); got != `["insert"]` {
		t.Errorf("after revoke: %s", r.Lookup("privileges"))
	}

	// grant/revokeRolesToRole, updateRole.
	run(t, test, bson.D{{Key: "revokeRolesFromRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"read"}}})
	run(t, test, bson.D{{Key: "grantRolesToRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"readWrite"}}})
	r = docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "clerk"}}), "roles")[0]
	if got := roleNames(t, r.Lookup("roles")); !slices.Equal(got, []string{"orderReader@test", "readWrite@test"}) {
		t.Errorf("clerk roles %v", got)
	}
	run(t, test, bson.D{{Key: "updateRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"read"}}})
	r = docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "clerk"}}), "roles")[0]
	if got := roleNames(t, r.Lookup("roles")); !slices.Equal(got, []string{"read@test"}) {
		t.Errorf("clerk roles after updateRole %v", got)
	}

	// Dropping a role takes it from the users and roles holding it.
	run(t, test, bson.D{{Key: "grantRolesToRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"orderReader"}}})
	run(t, test, bson.D{{Key: "createUser", Value: "ivy"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"orderReader", "read"}}})
	run(t, test, bson.D{{Key: "dropRole", Value: "orderReader"}})
	u := usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "ivy"}}))[0]
	if got := roleNames(t, u.Lookup("roles")); !slices.Equal(got, []string{"read@test"}) {
		t.Errorf("ivy's roles after dropRole: %v", got)
	}
	r = docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "clerk"}}), "roles")[0]
	if got := roleNames(t, r.Lookup("roles")); !slices.Equal(got, []string{"read@test"}) {
		t.Errorf("clerk's roles after dropRole: %v", got)
	}
	reply := run(t, test, bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	if n := reply.Lookup("n").Int32(); n != 1 {
		t.Errorf("dropAllRolesFromDatabase n = %d, want 1", n)
	}
}

func TestUserMgmtSurvivesRestart(t *testing.T) {
	ts := startServer(t)
	test := ts.Client.Database("test")
	run(t, test, bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	run(t, test, bson.D{{Key: "createUser", Value: "jo"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"r"}}})
	before := usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "jo"}, {Key: "showCredentials", Value: true}}))[0]
	// Written like any collection, the users and roles are in the oplog.
	oplog := ts.Client.Database("local").Collection("oplog.rs")
	for _, ns := range []string{"admin.system.users", "admin.system.roles"} {
		if n, err := oplog.CountDocuments(testCtx(t), bson.D{{Key: "ns", Value: ns}, {Key: "op", Value: "i"}}); err != nil || n != 1 {
			t.Errorf("%d inserts of %s in the oplog (%v), want 1", n, ns, err)
		}
	}
	// Built-in roles of admin are granted on admin.
	admin := ts.Client.Database("admin")
	run(t, admin, bson.D{{Key: "createUser", Value: "boss"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root", "userAdminAnyDatabase"}}})
	ts.Restart(t)
	test = ts.Client.Database("test")
	after := usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "jo"}, {Key: "showCredentials", Value: true}}))
	if len(after) != 1 || after[0].String() != before.String() {
		t.Fatalf("after restart %v, before %s", after, before)
	}
	if n := len(docsOf(t, run(t, test, bson.D{{Key: "rolesInfo", Value: "r"}}), "roles")); n != 1 {
		t.Errorf("role lost in restart")
	}
	boss := usersOf(t, run(t, ts.Client.Database("admin"), bson.D{{Key: "usersInfo", Value: "boss"}}))
	if len(boss) != 1 || !slices.Equal(roleNames(t, boss[0].Lookup("roles")), []string{"root@admin", "userAdminAnyDatabase@admin"}) {
		t.Errorf("admin user after restart: %v", boss)
	}
	// The unique index came through too.
	wantCode(t, runErr(test, bson.D{{Key: "createUser", Value: "jo"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}}), 51003)
}

func TestUserMgmtDirectWritesRefused(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	admin := ts.Client.Database("admin")
	run(t, ts.Client.Database("test"), bson.D{{Key: "createUser", Value: "kim"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	for _, coll := range []string{"system.users", "system.roles"} {
		c := admin.Collection(coll)
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "test.mallory"}, {Key: "user", Value: "mallory"}, {Key: "db", Value: "test"}})
		wantCode(t, err, 13)
		_, err = c.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "roles", Value: bson.A{}}}}})
		wantCode(t, err, 13)
		_, err = c.DeleteMany(ctx, bson.D{})
		wantCode(t, err, 13)
		wantCode(t, c.FindOneAndDelete(ctx, bson.D{}).Err(), 13)
	}
	mustInsert(t, ts.Client.Database("test").Collection("planted"), bson.D{{Key: "_id", Value: "test.mallory"}})
	for _, cmd := range []bson.D{
		{{Key: "renameCollection", Value: "test.planted"}, {Key: "to", Value: "admin.system.users"}, {Key: "dropTarget", Value: true}},
		{{Key: "renameCollection", Value: "admin.system.users"}, {Key: "to", Value: "test.stolen"}},
	} {
		wantCode(t, runErr(admin, cmd), 13)
	}
	// Reading stays possible (mongodump reads them).
	if n, err := admin.Collection("system.users").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Errorf("count system.users: %d, %v", n, err)
	}
}

// Concurrent grants to one user all stand: each command reads the user and
// writes it back, which MongoDB serializes.
func TestUserMgmtConcurrentGrants(t *testing.T) {
	ts := startServer(t)
	test := ts.Client.Database("test")
	run(t, test, bson.D{{Key: "createUser", Value: "many"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	const n = 16
	errs := make(chan error, n)
	for i := range n {
		go func() {
			role := bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: fmt.Sprintf("db%d", i)}}
			errs <- runErr(test, bson.D{{Key: "grantRolesToUser", Value: "many"}, {Key: "roles", Value: bson.A{role}}})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	u := usersOf(t, run(t, test, bson.D{{Key: "usersInfo", Value: "many"}}))[0]
	if got := roleNames(t, u.Lookup("roles")); len(got) != n {
		t.Errorf("%d roles after %d concurrent grants: %v", len(got), n, got)
	}
}
