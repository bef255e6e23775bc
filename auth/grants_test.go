package auth

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// memStore is a Store over fixed roles.
type memStore struct {
	roles map[RoleName]*Role
	err   error
}

func (m memStore) User(context.Context, string, string) (*User, error) { return nil, nil }

func (m memStore) Role(_ context.Context, db, name string) (*Role, error) {
	if m.err != nil {
		return nil, m.err
	}
	return m.roles[RoleName{Role: name, DB: db}], nil
}

func resolve(t *testing.T, store Store, roles ...RoleName) *Grants {
	t.Helper()
	g, err := Resolve(context.Background(), store, roles)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func ns(db, coll string) Resource { return Resource{DB: db, Collection: coll} }

var cluster = Resource{Cluster: true}

func TestAllowsMatching(t *testing.T) {
	store := memStore{roles: map[RoleName]*Role{
		{"named", "app"}: {Name: "named", DB: "app", Privileges: []Privilege{
			{Resource: Resource{Collection: "logs"}, Actions: acts("find")},
			{Resource: Resource{Collection: "system.views"}, Actions: acts("find")},
			{Resource: ns("app", "system.profile"), Actions: acts("remove")},
			{Resource: Resource{DB: "app"}, Actions: acts("insert")},
			{Resource: Resource{}, Actions: acts("update")},
		}},
	}}
	g := resolve(t, store, RoleName{"named", "app"})
	cases := []struct {
		r    Resource
		a    Action
		want bool
	}{
		{ns("x", "logs"), "find", true},         // collection name in any database
		{ns("x", "other"), "find", false},       //
		{ns("x", "system.views"), "find", true}, // also a system one, named
		{ns("app", "system.profile"), "remove", true},
		{ns("app", "c"), "insert", true},             // database grant
		{Resource{DB: "app"}, "insert", true},        // the database itself
		{ns("app", "system.users"), "insert", false}, // not its system collections
		{ns("other", "c"), "insert", false},
		{ns("other", "c"), "update", true},          // any normal resource
		{Resource{DB: "other"}, "update", true},     //
		{ns("other", "system.js"), "update", false}, // but no system collection
		{ns("local", "c"), "update", false},         // nor local
		{ns("config", "c"), "update", false},        // nor config
		{Resource{DB: "local"}, "update", false},    //
		{cluster, "update", false},                  // nor the cluster
		{ns("local", "replset.minvalid"), "update", false},
	}
	for _, tc := range cases {
		if got := g.Allows(tc.r, tc.a); got != tc.want {
			t.Errorf("Allows(%+v, %s) = %v", tc.r, tc.a, got)
		}
	}
	var none *Grants
	if none.Allows(ns("a", "b"), "find") {
		t.Error("nil grants allow")
	}
}

func TestResolveInheritanceAndCycles(t *testing.T) {
	store := memStore{roles: map[RoleName]*Role{
		{"a", "app"}: {Roles: []RoleName{{"b", "app"}}, Privileges: []Privilege{onDB("app", acts("insert"))}},
		{"b", "app"}: {Roles: []RoleName{{"a", "app"}, {"read", "reports"}, {"gone", "app"}},
			Privileges: []Privilege{onDB("app", acts("insert", "remove"))}},
	}}
	g := resolve(t, store, RoleName{"a", "app"}, RoleName{"a", "app"})
	want := []RoleName{{"a", "app"}, {"b", "app"}, {"read", "reports"}}
	if !slices.Equal(g.Roles(), want) {
		t.Fatalf("roles %v, want %v", g.Roles(), want)
	}
	if !g.Allows(ns("app", "c"), "remove") || !g.Allows(ns("reports", "c"), "find") {
		t.Fatal("inherited privileges missing")
	}
	if g.Allows(ns("reports", "c"), "insert") {
		t.Fatal("read grants insert")
	}
	privs := g.Privileges()
	if len(privs) != 3 { // app, reports, reports.system.js
		t.Fatalf("privileges %v", privs)
	}
	if !slices.Equal(privs[0].Actions, acts("insert", "remove")) {
		t.Fatalf("actions not merged: %v", privs[0])
	}

	_, err := Resolve(context.Background(), memStore{err: errors.New("boom")}, []RoleName{{"x", "app"}})
	if err == nil {
		t.Fatal("store error swallowed")
	}
}

func TestResolveBuiltinRecordsInherited(t *testing.T) {
	g := resolve(t, nil, RoleName{"root", "admin"})
	roles := g.Roles()
	for _, r := range []RoleName{{"root", "admin"}, {"clusterAdmin", "admin"},
		{"clusterMonitor", "admin"}, {"read", "local"}, {"readAnyDatabase", "admin"},
		{"__queryableBackup", "admin"}} {
		if !slices.Contains(roles, r) {
			t.Errorf("%v not among %v", r, roles)
		}
	}
	// A built-in name in the wrong database is not built in: it is looked
	// up in the store, which has nothing.
	g = resolve(t, memStore{}, RoleName{"root", "test"})
	if len(g.Roles()) != 0 || g.Allows(ns("test", "c"), "find") {
		t.Fatal("root on test grants something")
	}
}

func TestSystemRoleAllowsAnything(t *testing.T) {
	g := resolve(t, nil, RoleName{"__system", "admin"})
	for _, r := range []Resource{cluster, ns("local", "system.replset"), {AnyResource: true}} {
		if !g.Allows(r, "anything") {
			t.Errorf("__system refused on %+v", r)
		}
	}
}

func TestMerge(t *testing.T) {
	a := resolve(t, nil, RoleName{"read", "a"})
	b := resolve(t, nil, RoleName{"readWrite", "b"})
	if a.Allows(ns("b", "c"), "insert") {
		t.Fatal("before merge")
	}
	a.Merge(b)
	if !a.Allows(ns("b", "c"), "insert") || !a.Allows(ns("a", "c"), "find") {
		t.Fatal("merge lost privileges")
	}
	if !slices.Contains(a.Roles(), RoleName{"readWrite", "b"}) {
		t.Fatal("merge lost roles")
	}
	var empty Grants
	empty.Merge(b)
	if !empty.Allows(ns("b", "c"), "insert") {
		t.Fatal("merge into zero Grants")
	}
}

// AnyInDB is MongoDB's isAuthorizedForAnyActionOnAnyResourceInDB, which
// decides the databases listDatabases shows a client without listDatabases.
func TestAnyInDB(t *testing.T) {
	store := memStore{roles: map[RoleName]*Role{
		{"coll", "app"}:  {Privileges: []Privilege{onColl("shop", "orders", acts("find"))}},
		{"named", "app"}: {Privileges: []Privilege{onCollAnyDB("logs", acts("find"))}},
		{"clus", "app"}:  {Privileges: []Privilege{onCluster(acts("serverStatus"))}},
		{"any", "app"}:   {Privileges: []Privilege{onAnyNormal(acts("find"))}},
	}}
	cases := []struct {
		roles []RoleName
		db    string
		want  bool
	}{
		{[]RoleName{{"read", "test"}}, "test", true},
		{[]RoleName{{"read", "test"}}, "other", false},
		{[]RoleName{{"coll", "app"}}, "shop", true},
		{[]RoleName{{"coll", "app"}}, "app", false},
		{[]RoleName{{"named", "app"}}, "anything", true},
		{[]RoleName{{"clus", "app"}}, "admin", false},
		{[]RoleName{{"readAnyDatabase", "admin"}}, "sales", true},
		{[]RoleName{{"any", "app"}}, "sales", true},
		{[]RoleName{{"any", "app"}}, "local", false}, // never local or config
		// readAnyDatabase's grant on system.js in every database reaches
		// local too, as in MongoDB.
		{[]RoleName{{"readAnyDatabase", "admin"}}, "local", true},
		{[]RoleName{{"__system", "admin"}}, "local", true},
	}
	for _, tc := range cases {
		if got := resolve(t, store, tc.roles...).AnyInDB(tc.db); got != tc.want {
			t.Errorf("%v in %s: %v", tc.roles, tc.db, got)
		}
	}
}
