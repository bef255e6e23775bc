package auth

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func doc(t testing.TB, d any) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(toBSON(d))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dd is a terse document for the tables below (bson.D's fields must be
// keyed); toBSON turns it, and arrays holding it, into bson.D.
type dd []kv

type kv struct {
	Key   string
	Value any
}

func toBSON(v any) any {
	switch v := v.(type) {
	case dd:
		out := bson.D{}
		for _, e := range v {
			out = append(out, bson.E{Key: e.Key, Value: toBSON(e.Value)})
		}
		return out
	case bson.A:
		out := bson.A{}
		for _, e := range v {
			out = append(out, toBSON(e))
		}
		return out
	}
	return v
}

// serverCommandNames reads the names and aliases of every command the
// server registers, from the command literals of its source: the server's
// own table (name, handle) and the command kit's definitions of the
// packages that serve commands for it (Name, Handle).
func serverCommandNames(t *testing.T) []string {
	files, err := filepath.Glob("../*/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("server sources: %v", err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			var name string
			var aliases []string
			hasHandle := false
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key, _ := kv.Key.(*ast.Ident)
				if key == nil {
					continue
				}
				switch strings.ToLower(key.Name) {
				case "name":
					if bl, ok := kv.Value.(*ast.BasicLit); ok {
						name, _ = strconv.Unquote(bl.Value)
					}
				case "aliases":
					if al, ok := kv.Value.(*ast.CompositeLit); ok {
						for _, a := range al.Elts {
							if bl, ok := a.(*ast.BasicLit); ok {
								s, _ := strconv.Unquote(bl.Value)
								aliases = append(aliases, s)
							}
						}
					}
				case "handle":
					hasHandle = true
				}
			}
			if name != "" && hasHandle {
				names = append(names, name)
				names = append(names, aliases...)
			}
			return true
		})
	}
	if len(names) < 50 {
		t.Fatalf("found only %d commands in the server's source: %v", len(names), names)
	}
	return names
}

// TestEveryServerCommandHasARule: the server refuses commands Required does
// not know, so every command it registers must have a rule.
func TestEveryServerCommandHasARule(t *testing.T) {
	for _, name := range serverCommandNames(t) {
		_, err := Required(name, "admin", doc(t, bson.D{{Key: name, Value: "c"}}))
		if errors.Is(err, ErrUnknownCommand) {
			t.Errorf("no rule for the server's command %q", name)
		}
	}
	if _, err := Required("noSuchCommand", "test", doc(t, bson.D{{Key: "noSuchCommand", Value: 1}})); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("unknown command: %v", err)
	}
}

// Every action Required asks for is one of MongoDB's.
func TestRequiredActionsAreKnown(t *testing.T) {
	for _, tables := range []map[string]Action{clusterCommands, collectionCommands, databaseCommands} {
		for cmd, a := range tables {
			if !IsAction(string(a)) {
				t.Errorf("%s requires unknown action %q", cmd, a)
			}
		}
	}
}

func TestRequired(t *testing.T) {
	p := func(r Resource, a ...string) Privilege { return Privilege{Resource: r, Actions: acts(a...)} }
	pipe := func(stages ...dd) bson.A {
		a := bson.A{}
		for _, s := range stages {
			a = append(a, s)
		}
		return a
	}
	type D = dd
	cases := []struct {
		cmd, db string
		body    dd
		want    []Privilege
	}{
		{"ping", "admin", D{{"ping", 1}}, nil},
		// mongorestore's merge of users and roles: MongoDB's
		// checkAuthForMergeAuthzCollectionsCommand.
		{"_mergeAuthzCollections", "admin", D{{"_mergeAuthzCollections", 1}, {"tempUsersCollection", "admin.tempusers"},
			{"tempRolesCollection", "admin.temproles"}, {"drop", false}, {"db", "app"}},
			[]Privilege{p(Resource{}, "createRole", "createUser", "grantRole", "revokeRole"),
				p(ns("admin", "tempusers"), "find"), p(ns("admin", "temproles"), "find")}},
		{"_mergeAuthzCollections", "admin", D{{"_mergeAuthzCollections", 1}, {"tempUsersCollection", "admin.tu"}, {"drop", true}, {"db", ""}},
			[]Privilege{p(Resource{}, "createRole", "createUser", "dropRole", "dropUser", "grantRole", "revokeRole"),
				p(ns("admin", "tu"), "find")}},
		{"getMore", "test", D{{"getMore", int64(1)}, {"collection", "c"}}, nil},
		{"listDatabases", "admin", D{{"listDatabases", 1}}, nil},
		{"find", "test", D{{"find", "c"}}, []Privilege{p(ns("test", "c"), "find")}},
		{"count", "test", D{{"count", "c"}}, []Privilege{p(ns("test", "c"), "find")}},
		{"distinct", "test", D{{"distinct", "c"}}, []Privilege{p(ns("test", "c"), "find")}},
		{"listIndexes", "test", D{{"listIndexes", "c"}}, []Privilege{p(ns("test", "c"), "listIndexes")}},
		{"insert", "test", D{{"insert", "c"}}, []Privilege{p(ns("test", "c"), "insert")}},
		{"insert", "test", D{{"insert", "c"}, {"bypassDocumentValidation", true}},
			[]Privilege{p(ns("test", "c"), "bypassDocumentValidation", "insert")}},
		{"update", "test", D{{"update", "c"}, {"updates", bson.A{D{{"q", D{}}, {"u", D{}}}}}},
			[]Privilege{p(ns("test", "c"), "update")}},
		{"update", "test", D{{"update", "c"}, {"updates", bson.A{D{{"q", D{}}}, D{{"q", D{}}, {"upsert", true}}}}},
			[]Privilege{p(ns("test", "c"), "insert", "update")}},
		{"delete", "test", D{{"delete", "c"}}, []Privilege{p(ns("test", "c"), "remove")}},
		{"findAndModify", "test", D{{"findAndModify", "c"}, {"update", D{}}},
			[]Privilege{p(ns("test", "c"), "find", "update")}},
		{"findAndModify", "test", D{{"findAndModify", "c"}, {"update", D{}}, {"upsert", true}},
			[]Privilege{p(ns("test", "c"), "find", "insert", "update")}},
		{"findandmodify", "test", D{{"findandmodify", "c"}, {"remove", true}},
			[]Privilege{p(ns("test", "c"), "find", "remove")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(D{{"$match", D{}}})}},
			[]Privilege{p(ns("test", "c"), "find")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(
			D{{"$lookup", D{{"from", "o"}, {"as", "x"}, {"pipeline", pipe(D{{"$unionWith", "u"}})}}}},
			D{{"$out", "dest"}})}},
			[]Privilege{p(ns("test", "c"), "find"), p(ns("test", "o"), "find"), p(ns("test", "u"), "find"),
				p(ns("test", "dest"), "insert", "remove")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(
			D{{"$graphLookup", D{{"from", "g"}}}},
			D{{"$facet", D{{"a", pipe(D{{"$unionWith", D{{"coll", "f"}}}})}}}},
			D{{"$merge", D{{"into", D{{"db", "other"}, {"coll", "m"}}}}}})}},
			[]Privilege{p(ns("test", "c"), "find"), p(ns("test", "g"), "find"), p(ns("test", "f"), "find"),
				p(ns("other", "m"), "insert", "update")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(
			D{{"$merge", D{{"into", "m"}, {"whenMatched", "fail"}}}})}},
			[]Privilege{p(ns("test", "c"), "find"), p(ns("test", "m"), "insert")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(D{{"$collStats", D{}}})}},
			[]Privilege{p(ns("test", "c"), "collStats")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(D{{"$indexStats", D{}}})}},
			[]Privilege{p(ns("test", "c"), "indexStats")}},
		{"aggregate", "test", D{{"aggregate", "c"}, {"pipeline", pipe(D{{"$changeStream", D{}}})}},
			[]Privilege{p(ns("test", "c"), "changeStream", "find")}},
		{"aggregate", "test", D{{"aggregate", 1}, {"pipeline", pipe(D{{"$changeStream", D{}}})}},
			[]Privilege{p(Resource{DB: "test"}, "changeStream", "find")}},
		{"aggregate", "admin", D{{"aggregate", 1}, {"pipeline", pipe(D{{"$changeStream", D{{"allChangesForCluster", true}}}})}},
			[]Privilege{p(Resource{}, "changeStream", "find")}},
		{"aggregate", "admin", D{{"aggregate", 1}, {"pipeline", pipe(D{{"$currentOp", D{{"allUsers", true}}}})}},
			[]Privilege{p(cluster, "inprog")}},
		{"aggregate", "admin", D{{"aggregate", 1}, {"pipeline", pipe(D{{"$currentOp", D{}}})}}, nil},
		{"aggregate", "config", D{{"aggregate", "system.sessions"}, {"pipeline", pipe(D{{"$listSessions", D{{"allUsers", true}}}})}},
			[]Privilege{p(cluster, "listSessions")}},
		{"explain", "test", D{{"explain", D{{"find", "c"}}}}, []Privilege{p(ns("test", "c"), "find")}},
		{"create", "test", D{{"create", "c"}}, []Privilege{p(ns("test", "c"), "createCollection")}},
		{"create", "test", D{{"create", "v"}, {"viewOn", "c"}, {"pipeline", pipe(D{{"$lookup", D{{"from", "o"}}}})}},
			[]Privilege{p(ns("test", "v"), "createCollection"), p(ns("test", "c"), "find"), p(ns("test", "o"), "find")}},
		{"drop", "test", D{{"drop", "c"}}, []Privilege{p(ns("test", "c"), "dropCollection")}},
		{"dropDatabase", "test", D{{"dropDatabase", 1}}, []Privilege{p(Resource{DB: "test"}, "dropDatabase")}},
		{"createIndexes", "test", D{{"createIndexes", "c"}}, []Privilege{p(ns("test", "c"), "createIndex")}},
		{"dropIndexes", "test", D{{"dropIndexes", "c"}}, []Privilege{p(ns("test", "c"), "dropIndex")}},
		{"deleteIndexes", "test", D{{"deleteIndexes", "c"}}, []Privilege{p(ns("test", "c"), "dropIndex")}},
		{"collMod", "test", D{{"collMod", "c"}}, []Privilege{p(ns("test", "c"), "collMod")}},
		{"listCollections", "test", D{{"listCollections", 1}}, []Privilege{p(Resource{DB: "test"}, "listCollections")}},
		{"renameCollection", "admin", D{{"renameCollection", "a.x"}, {"to", "b.y"}, {"dropTarget", true}},
			[]Privilege{p(ns("a", "x"), "dropCollection", "find"), p(ns("b", "y"), "createIndex", "dropCollection", "insert")}},
		{"serverStatus", "admin", D{{"serverStatus", 1}}, []Privilege{p(cluster, "serverStatus")}},
		{"currentOp", "admin", D{{"currentOp", 1}}, []Privilege{p(cluster, "inprog")}},
		{"currentOp", "admin", D{{"currentOp", 1}, {"$ownOps", true}}, nil},
		{"killOp", "admin", D{{"killOp", 1}}, []Privilege{p(cluster, "killop")}},
		{"replSetInitiate", "admin", D{{"replSetInitiate", D{}}}, []Privilege{p(cluster, "replSetConfigure")}},
		{"advanceClock", "admin", D{{"advanceClock", 1}}, []Privilege{p(cluster, string(LetheInternal))}},
		{"dbStats", "test", D{{"dbStats", 1}}, []Privilege{p(Resource{DB: "test"}, "dbStats")}},
		{"dbstats", "test", D{{"dbstats", 1}}, []Privilege{p(Resource{DB: "test"}, "dbStats")}},
		// dataSize names a full namespace, of any database (mongod's
		// CmdDatasize checks find on it).
		{"dataSize", "admin", D{{"dataSize", "test.c"}}, []Privilege{p(ns("test", "c"), "find")}},
		{"datasize", "test", D{{"datasize", "test.c.d"}}, []Privilege{p(ns("test", "c.d"), "find")}},
		{"createUser", "test", D{{"createUser", "u"}, {"roles", bson.A{"read", D{{"role", "read"}, {"db", "other"}}}}},
			[]Privilege{p(Resource{DB: "test"}, "createUser", "grantRole"), p(Resource{DB: "other"}, "grantRole")}},
		{"updateUser", "test", D{{"updateUser", "u"}, {"pwd", "x"}}, []Privilege{p(Resource{DB: "test"}, "changePassword")}},
		{"updateUser", "test", D{{"updateUser", "u"}, {"roles", bson.A{"read"}}},
			[]Privilege{p(Resource{}, "revokeRole"), p(Resource{DB: "test"}, "grantRole")}},
		{"dropUser", "test", D{{"dropUser", "u"}}, []Privilege{p(Resource{DB: "test"}, "dropUser")}},
		{"revokeRolesFromUser", "test", D{{"revokeRolesFromUser", "u"}, {"roles", bson.A{"read"}}},
			[]Privilege{p(Resource{DB: "test"}, "revokeRole")}},
		{"createRole", "test", D{{"createRole", "r"}, {"roles", bson.A{}}, {"privileges", bson.A{
			D{{"resource", D{{"db", "test"}, {"collection", ""}}}, {"actions", bson.A{"find"}}},
			D{{"resource", D{{"cluster", true}}}, {"actions", bson.A{"serverStatus"}}}}}},
			[]Privilege{p(Resource{DB: "test"}, "createRole", "grantRole"), p(Resource{DB: "admin"}, "grantRole")}},
		{"usersInfo", "test", D{{"usersInfo", 1}}, []Privilege{p(Resource{DB: "test"}, "viewUser")}},
		{"usersInfo", "test", D{{"usersInfo", D{{"user", "u"}, {"db", "other"}}}}, []Privilege{p(Resource{DB: "other"}, "viewUser")}},
		{"usersInfo", "admin", D{{"usersInfo", D{{"forAllDBs", true}}}}, []Privilege{p(cluster, "viewUser")}},
		{"rolesInfo", "test", D{{"rolesInfo", bson.A{"r", D{{"role", "s"}, {"db", "other"}}}}},
			[]Privilege{p(Resource{DB: "test"}, "viewRole"), p(Resource{DB: "other"}, "viewRole")}},
		{"updateRole", "test", D{{"updateRole", "r"}}, []Privilege{p(Resource{}, "revokeRole")}},
	}
	for _, tc := range cases {
		got, err := Required(tc.cmd, tc.db, doc(t, tc.body))
		if err != nil {
			t.Errorf("%s %v: %v", tc.cmd, tc.body, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %v:\n got %v\nwant %v", tc.cmd, tc.body, got, tc.want)
		}
		for _, p := range got {
			for _, a := range p.Actions {
				if !IsAction(string(a)) {
					t.Errorf("%s requires unknown action %q", tc.cmd, a)
				}
			}
		}
	}
}

func TestRequiredMalformed(t *testing.T) {
	for _, body := range []bson.D{
		{{Key: "find", Value: 1}},
		{{Key: "aggregate", Value: "c"}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{1}}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: 1}}}}},
		{{Key: "renameCollection", Value: "a"}, {Key: "to", Value: "b.c"}},
		{{Key: "explain", Value: bson.D{}}},
		{{Key: "createUser", Value: "u"}, {Key: "roles", Value: bson.A{1}}},
	} {
		if _, err := Required(body[0].Key, "test", doc(t, body)); err == nil {
			t.Errorf("%v accepted", body)
		}
	}
}

func TestOwnUserException(t *testing.T) {
	type D = bson.D
	cases := []struct {
		cmd  string
		body D
		want OwnUserRequest
		ok   bool
	}{
		{"updateUser", D{{Key: "updateUser", Value: "u"}, {Key: "pwd", Value: "x"}},
			OwnUserRequest{User: "u", DB: "test", Actions: acts("changeOwnPassword")}, true},
		{"updateUser", D{{Key: "updateUser", Value: "u"}, {Key: "customData", Value: D{}}, {Key: "pwd", Value: "x"}},
			OwnUserRequest{User: "u", DB: "test", Actions: acts("changeOwnCustomData", "changeOwnPassword")}, true},
		{"updateUser", D{{Key: "updateUser", Value: "u"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}, OwnUserRequest{}, false},
		{"updateUser", D{{Key: "updateUser", Value: "u"}}, OwnUserRequest{}, false},
		{"usersInfo", D{{Key: "usersInfo", Value: "u"}}, OwnUserRequest{User: "u", DB: "test"}, true},
		{"usersInfo", D{{Key: "usersInfo", Value: D{{Key: "user", Value: "u"}, {Key: "db", Value: "x"}}}}, OwnUserRequest{User: "u", DB: "x"}, true},
		{"usersInfo", D{{Key: "usersInfo", Value: bson.A{"u", "v"}}}, OwnUserRequest{}, false},
		{"usersInfo", D{{Key: "usersInfo", Value: 1}}, OwnUserRequest{}, false},
		{"dropUser", D{{Key: "dropUser", Value: "u"}}, OwnUserRequest{}, false},
	}
	for _, tc := range cases {
		got, ok := OwnUserException(tc.cmd, "test", doc(t, tc.body))
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: %+v %v", tc.body, got, ok)
		}
	}
}
