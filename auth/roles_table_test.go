package auth

import (
	"errors"
	"slices"
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestBuiltinRolesTable runs a set of commands against each built-in role
// and checks which ones MongoDB's manual says the role allows. Source:
// "Built-In Roles", https://www.mongodb.com/docs/v7.0/reference/built-in-roles/
// (and "Privilege Actions" for which action each command needs). The
// database roles are granted on "test", the others on admin.
func TestBuiltinRolesTable(t *testing.T) {
	type command struct {
		cmd, db string
		body    dd
	}
	commands := map[string]command{
		"find":             {"find", "test", dd{{"find", "c"}}},
		"findOther":        {"find", "other", dd{{"find", "c"}}},
		"findLocal":        {"find", "local", dd{{"find", "oplog.rs"}}},
		"findSystemUsers":  {"find", "admin", dd{{"find", "system.users"}}},
		"insert":           {"insert", "test", dd{{"insert", "c"}}},
		"insertOther":      {"insert", "other", dd{{"insert", "c"}}},
		"createIndexes":    {"createIndexes", "test", dd{{"createIndexes", "c"}}},
		"drop":             {"drop", "test", dd{{"drop", "c"}}},
		"dropDatabase":     {"dropDatabase", "test", dd{{"dropDatabase", 1}}},
		"collStats":        {"collStats", "test", dd{{"collStats", "c"}}},
		"listCollections":  {"listCollections", "test", dd{{"listCollections", 1}}},
		"createUser":       {"createUser", "test", dd{{"createUser", "u"}, {"roles", bson.A{}}}},
		"serverStatus":     {"serverStatus", "admin", dd{{"serverStatus", 1}}},
		"currentOp":        {"currentOp", "admin", dd{{"currentOp", 1}}},
		"killOp":           {"killOp", "admin", dd{{"killOp", 1}}},
		"setParameter":     {"setParameter", "admin", dd{{"setParameter", 1}}},
		"shutdown":         {"shutdown", "admin", dd{{"shutdown", 1}}},
		"replSetGetStatus": {"replSetGetStatus", "admin", dd{{"replSetGetStatus", 1}}},
		"replSetInitiate":  {"replSetInitiate", "admin", dd{{"replSetInitiate", 1}}},
		"advanceClock":     {"advanceClock", "admin", dd{{"advanceClock", 1}}},
		"listDatabases":    {"listDatabases", "admin", dd{{"listDatabases", 1}}},
	}
	// The commands each role allows; every other one it refuses.
	// listDatabases needs no privilege (the server filters its answer).
	allowed := map[string][]string{
		// read: "the ability to read data on all non-system collections".
		"read": {"find", "collStats", "listCollections", "listDatabases"},
		// readWrite: read plus insert, createIndex, dropCollection, ... but
		// not dropDatabase (that is dbAdmin's).
		"readWrite": {"find", "collStats", "listCollections", "listDatabases",
			"insert", "createIndexes", "drop"},
		// dbAdmin: schema, indexing and statistics, "does not grant
		// privileges for reading data" or user management.
		"dbAdmin": {"collStats", "listCollections", "listDatabases", "createIndexes",
			"drop", "dropDatabase"},
		// userAdmin: create and modify roles and users of its database.
		"userAdmin": {"createUser", "listDatabases"},
		// dbOwner: readWrite, dbAdmin and userAdmin combined.
		"dbOwner": {"find", "collStats", "listCollections", "listDatabases", "insert",
			"createIndexes", "drop", "dropDatabase", "createUser"},
		// clusterMonitor: read-only monitoring (serverStatus, inprog,
		// replSetGetStatus) and read on local and config.
		"clusterMonitor": {"serverStatus", "currentOp", "replSetGetStatus", "listDatabases",
			"findLocal", "collStats"},
		// hostManager: monitor and manage servers (killop, setParameter,
		// shutdown).
		"hostManager": {"killOp", "setParameter", "shutdown", "listDatabases"},
		// clusterManager: replica set management (replSetConfigure).
		"clusterManager": {"replSetGetStatus", "replSetInitiate", "listDatabases"},
		// clusterAdmin: the three above, plus dropDatabase.
		"clusterAdmin": {"serverStatus", "currentOp", "replSetGetStatus", "listDatabases",
			"findLocal", "collStats", "killOp", "setParameter", "shutdown",
			"replSetInitiate", "dropDatabase"},
		// readAnyDatabase: read on every database but local and config.
		"readAnyDatabase": {"find", "findOther", "collStats", "listCollections",
			"listDatabases"},
		"readWriteAnyDatabase": {"find", "findOther", "collStats", "listCollections",
			"listDatabases", "insert", "insertOther", "createIndexes", "drop"},
		// userAdminAnyDatabase: userAdmin on every database, and read on
		// admin.system.users.
		"userAdminAnyDatabase": {"createUser", "listDatabases", "findSystemUsers"},
		"dbAdminAnyDatabase": {"collStats", "listCollections", "listDatabases",
			"createIndexes", "drop", "dropDatabase"},
		// backup: find on every collection including local's and
		// system.users, serverStatus; no writes.
		"backup": {"find", "findOther", "findLocal", "findSystemUsers", "collStats",
			"listCollections", "listDatabases", "serverStatus"},
		// restore: writes (insert, createIndex, createCollection,
		// dropCollection) and find on system.users, but no find on
		// ordinary collections.
		"restore": {"insert", "insertOther", "createIndexes", "drop", "listCollections",
			"listDatabases", "createUser", "findSystemUsers"},
		// root: everything, Lethe's own commands included.
		"root": keys(commands),
	}
	for role, ok := range allowed {
		db := "admin"
		if IsBuiltinRole(role, "test") {
			db = "test"
		}
		g := resolve(t, nil, RoleName{Role: role, DB: db})
		for name, c := range commands {
			err := Authorize(g, c.cmd, c.db, doc(t, c.body))
			want := slices.Contains(ok, name)
			var unauth *UnauthorizedError
			switch {
			case want && err != nil:
				t.Errorf("%s refused %s: %v", role, name, err)
			case !want && err == nil:
				t.Errorf("%s allowed %s", role, name)
			case !want && !errors.As(err, &unauth):
				t.Errorf("%s %s: %v is not an UnauthorizedError", role, name, err)
			}
		}
	}
	// Without any role, only what needs no privilege.
	for name, c := range commands {
		if err := Authorize(nil, c.cmd, c.db, doc(t, c.body)); (err == nil) != (name == "listDatabases") {
			t.Errorf("no roles, %s: %v", name, err)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestAuthorizeAlternatives covers the checks Authorize adds to Required.
func TestAuthorizeAlternatives(t *testing.T) {
	readWrite := resolve(t, nil, RoleName{"readWrite", "test"})
	read := resolve(t, nil, RoleName{"read", "test"})
	cases := []struct {
		name string
		g    *Grants
		cmd  string
		db   string
		body dd
		ok   bool
	}{
		// Renaming within a database with renameCollectionSameDB.
		{"rename same db", readWrite, "renameCollection", "admin",
			dd{{"renameCollection", "test.a"}, {"to", "test.b"}}, true},
		{"rename across dbs", readWrite, "renameCollection", "admin",
			dd{{"renameCollection", "test.a"}, {"to", "other.b"}}, false},
		{"rename without the action", read, "renameCollection", "admin",
			dd{{"renameCollection", "test.a"}, {"to", "test.b"}}, false},
		// listCollections of the collections one may see.
		{"authorized collections", resolve(t, memStore{roles: map[RoleName]*Role{
			{"one", "test"}: {Privileges: []Privilege{onColl("test", "c", acts("find"))}},
		}}, RoleName{"one", "test"}), "listCollections", "test",
			dd{{"listCollections", 1}, {"authorizedCollections", true}, {"nameOnly", true}}, true},
		{"authorized collections elsewhere", read, "listCollections", "other",
			dd{{"listCollections", 1}, {"authorizedCollections", true}, {"nameOnly", true}}, false},
		// rolesInfo about one's own roles.
		{"own role", read, "rolesInfo", "test", dd{{"rolesInfo", "read"}}, true},
		{"other role", read, "rolesInfo", "test", dd{{"rolesInfo", "readWrite"}}, false},
		{"own and other role", read, "rolesInfo", "test", dd{{"rolesInfo", bson.A{"read", "readWrite"}}}, false},
		{"own role, other viewable", resolve(t, nil, RoleName{"read", "test"}, RoleName{"userAdmin", "other"}),
			"rolesInfo", "test", dd{{"rolesInfo", bson.A{"read", dd{{"role", "x"}, {"db", "other"}}}}}, true},
	}
	for _, tc := range cases {
		err := Authorize(tc.g, tc.cmd, tc.db, doc(t, tc.body))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
