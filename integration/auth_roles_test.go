package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestAuthBuiltinRolesTable runs commands as a user of each built-in role
// and checks that those the role's documented privileges cover succeed and
// the rest fail with Unauthorized. The expectations come from MongoDB's
// manual, "Built-In Roles" (https://www.mongodb.com/docs/manual/reference/built-in-roles/);
// a cell is left out where the manual does not settle it. advanceClock is
// Lethe's own and only root may move the clock.
func TestAuthBuiltinRolesTable(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)

	type step struct {
		name string
		db   string // "app" or "admin"
		cmd  func(role string) bson.D
	}
	steps := []step{
		{"find", "app", func(string) bson.D { return bson.D{{Key: "find", Value: "c"}} }},
		{"insert", "app", func(string) bson.D {
			return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "y", Value: 1}}}}}
		}},
		{"createIndexes", "app", func(role string) bson.D {
			return bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
				bson.D{{Key: "key", Value: bson.D{{Key: role, Value: 1}}}, {Key: "name", Value: role}}}}}
		}},
		{"listCollections", "app", func(string) bson.D { return bson.D{{Key: "listCollections", Value: 1}} }},
		{"dbStats", "app", func(string) bson.D { return bson.D{{Key: "dbStats", Value: 1}} }},
		{"createUser", "app", func(role string) bson.D {
			return bson.D{{Key: "createUser", Value: "made_by_" + role}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}}
		}},
		{"serverStatus", "admin", func(string) bson.D { return bson.D{{Key: "serverStatus", Value: 1}} }},
		{"currentOp", "admin", func(string) bson.D { return bson.D{{Key: "currentOp", Value: 1}} }},
		{"setParameter", "admin", func(string) bson.D {
			return bson.D{{Key: "setParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: true}}
		}},
		{"advanceClock", "admin", func(string) bson.D { return bson.D{{Key: "advanceClock", Value: 1}} }},
		// Last: it removes what the others work on.
		{"dropDatabase", "app", func(string) bson.D { return bson.D{{Key: "dropDatabase", Value: 1}} }},
	}
	// allowed[role][step]: true allowed, false refused, absent not checked.
	y, n := true, false
	table := []struct {
		role, db string
		allowed  map[string]bool
	}{
		{"read", "app", map[string]bool{"find": y, "insert": n, "createIndexes": n, "listCollections": y, "dbStats": y,
			"createUser": n, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"readWrite", "app", map[string]bool{"find": y, "insert": y, "createIndexes": y, "listCollections": y, "dbStats": y,
			"createUser": n, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"dbAdmin", "app", map[string]bool{"find": n, "insert": n, "createIndexes": y, "listCollections": y, "dbStats": y,
			"createUser": n, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": y}},
		{"dbOwner", "app", map[string]bool{"find": y, "insert": y, "createIndexes": y, "listCollections": y, "dbStats": y,
			"createUser": y, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": y}},
		{"userAdmin", "app", map[string]bool{"find": n, "insert": n, "createIndexes": n, "dbStats": n,
			"createUser": y, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"clusterMonitor", "admin", map[string]bool{"find": n, "insert": n, "createIndexes": n,
			"createUser": n, "serverStatus": y, "currentOp": y, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"hostManager", "admin", map[string]bool{"find": n, "insert": n, "createIndexes": n,
			"createUser": n, "setParameter": y, "advanceClock": n, "dropDatabase": n}},
		{"clusterManager", "admin", map[string]bool{"find": n, "insert": n, "createUser": n, "setParameter": n, "advanceClock": n}},
		{"clusterAdmin", "admin", map[string]bool{"find": n, "insert": n, "createUser": n,
			"serverStatus": y, "currentOp": y, "setParameter": y, "advanceClock": n, "dropDatabase": y}},
		{"readAnyDatabase", "admin", map[string]bool{"find": y, "insert": n, "createIndexes": n, "listCollections": y, "dbStats": y,
			"createUser": n, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"readWriteAnyDatabase", "admin", map[string]bool{"find": y, "insert": y, "createIndexes": y, "listCollections": y, "dbStats": y,
			"createUser": n, "serverStatus": n, "currentOp": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"userAdminAnyDatabase", "admin", map[string]bool{"find": n, "insert": n, "createIndexes": n,
			"createUser": y, "serverStatus": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"dbAdminAnyDatabase", "admin", map[string]bool{"find": n, "insert": n, "createIndexes": y, "listCollections": y, "dbStats": y,
			"createUser": n, "serverStatus": n, "setParameter": n, "advanceClock": n, "dropDatabase": y}},
		{"backup", "admin", map[string]bool{"insert": n, "createUser": n, "setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"restore", "admin", map[string]bool{"setParameter": n, "advanceClock": n, "dropDatabase": n}},
		{"root", "admin", map[string]bool{"find": y, "insert": y, "createIndexes": y, "listCollections": y, "dbStats": y,
			"createUser": y, "serverStatus": y, "currentOp": y, "setParameter": y, "advanceClock": y, "dropDatabase": y}},
	}
	for _, row := range table {
		mustInsert(t, root.Database("app").Collection("c"), bson.D{{Key: "x", Value: 1}})
		user := "u_" + row.role
		createUser(t, root, row.db, user, bson.A{bson.D{{Key: "role", Value: row.role}, {Key: "db", Value: row.db}}})
		c := authClient(t, ts, user, "pw", row.db, "")
		for _, st := range steps {
			want, checked := row.allowed[st.name]
			if !checked {
				continue
			}
			err := c.Database(st.db).RunCommand(ctx, st.cmd(row.role)).Err()
			switch {
			case want && err != nil:
				t.Errorf("%s: %s refused: %v", row.role, st.name, err)
			case !want && errCode(err) != codeUnauthorized:
				t.Errorf("%s: %s gave %v, want Unauthorized (13)", row.role, st.name, err)
			}
		}
		c.Disconnect(ctx)
	}
}
