package auth

import (
	"slices"
	"testing"
)

func TestIsBuiltinRole(t *testing.T) {
	cases := []struct {
		name, db string
		want     bool
	}{
		{"read", "test", true},
		{"readWrite", "admin", true},
		{"dbOwner", "local", true},
		{"read", ExternalDB, false}, // $external holds users, not roles
		{"root", "admin", true},
		{"root", "test", false}, // admin-only roles exist only in admin
		{"readAnyDatabase", "test", false},
		{"clusterMonitor", "admin", true},
		{"Read", "test", false}, // names are case-sensitive
		{"myRole", "admin", false},
		{"read", "", false},
	}
	for _, tc := range cases {
		if got := IsBuiltinRole(tc.name, tc.db); got != tc.want {
			t.Errorf("IsBuiltinRole(%q, %q) = %v", tc.name, tc.db, got)
		}
	}
	want := []string{"dbAdmin", "dbOwner", "read", "readWrite", "userAdmin"}
	if got := BuiltinRoleNames("test"); !slices.Equal(got, want) {
		t.Errorf("roles of test: %v", got)
	}
	if !slices.Contains(BuiltinRoleNames("admin"), "root") {
		t.Error("admin lacks root")
	}
}

// Every action a built-in role grants is one of MongoDB's action names.
func TestBuiltinRoleActionsAreKnown(t *testing.T) {
	for name := range builtinRoles {
		db := "admin"
		privs, ok := BuiltinRolePrivileges(RoleName{Role: name, DB: db})
		if !ok {
			t.Fatalf("%s not built in", name)
		}
		for _, p := range privs {
			for _, a := range p.Actions {
				if !IsAction(string(a)) {
					t.Errorf("%s grants unknown action %q", name, a)
				}
			}
		}
	}
	if IsAction("Find") || IsAction("") || !IsAction("find") {
		t.Error("IsAction")
	}
}

func TestBuiltinRoleStructure(t *testing.T) {
	got := BuiltinRoleRoles(RoleName{"dbOwner", "sales"})
	want := []RoleName{{"readWrite", "sales"}, {"dbAdmin", "sales"}, {"userAdmin", "sales"}}
	if !slices.Equal(got, want) {
		t.Errorf("dbOwner inherits %v", got)
	}
	direct, _ := BuiltinRoleDirectPrivileges(RoleName{"dbOwner", "sales"})
	if len(direct) != 0 {
		t.Errorf("dbOwner's own privileges %v", direct)
	}
	all, _ := BuiltinRolePrivileges(RoleName{"dbOwner", "sales"})
	if len(all) == 0 || all[0].Resource != (Resource{DB: "sales"}) {
		t.Errorf("dbOwner privileges %v", all)
	}
	// read on a database grants on that database and its system.js only.
	read, _ := BuiltinRolePrivileges(RoleName{"read", "sales"})
	if len(read) != 2 || read[1].Resource != (Resource{DB: "sales", Collection: "system.js"}) {
		t.Errorf("read privileges %v", read)
	}
	if _, ok := BuiltinRolePrivileges(RoleName{"root", "sales"}); ok {
		t.Error("root in sales")
	}
}
