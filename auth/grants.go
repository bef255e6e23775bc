package auth

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Grants is what an authenticated client may do: the privileges of all
// its roles, built-in and user-defined, direct and inherited. A nil
// *Grants allows nothing.
type Grants struct {
	privs map[Resource]map[Action]struct{}
	roles []RoleName // direct and inherited, each once, first seen first
	seen  map[RoleName]bool
}

// Resolve collects the privileges of roles and of every role they inherit.
// Built-in roles come from this package, the others from store; a role
// that no longer exists grants nothing. Roles that inherit each other in a
// cycle are each visited once.
func Resolve(ctx context.Context, store Store, roles []RoleName) (*Grants, error) {
	g := &Grants{privs: map[Resource]map[Action]struct{}{}, seen: map[RoleName]bool{}}
	for _, r := range roles {
		if err := g.add(ctx, store, r); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Grants) add(ctx context.Context, store Store, r RoleName) error {
	if g.seen[r] {
		return nil
	}
	if IsBuiltinRole(r.Role, r.DB) {
		for _, n := range builtinClosure(r) {
			g.noteRole(n)
		}
		privs, _ := BuiltinRolePrivileges(r)
		g.grant(privs)
		return nil
	}
	g.seen[r] = true // before recursing, so a cycle stops here
	if store == nil {
		return nil
	}
	role, err := store.Role(ctx, r.DB, r.Role)
	if err != nil {
		return fmt.Errorf("auth: reading role %s.%s: %w", r.DB, r.Role, err)
	}
	if role == nil {
		return nil
	}
	g.roles = append(g.roles, r)
	g.grant(role.Privileges)
	for _, sub := range role.Roles {
		if err := g.add(ctx, store, sub); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grants) noteRole(r RoleName) {
	if !g.seen[r] {
		g.seen[r] = true
		g.roles = append(g.roles, r)
	}
}

func (g *Grants) grant(privs []Privilege) {
	for _, p := range privs {
		set := g.privs[p.Resource]
		if set == nil {
			set = map[Action]struct{}{}
			g.privs[p.Resource] = set
		}
		for _, a := range p.Actions {
			set[a] = struct{}{}
		}
	}
}

// Merge adds o's privileges and roles to g: a connection authenticated as
// several users (on different databases) may do what any of them may.
func (g *Grants) Merge(o *Grants) {
	if o == nil {
		return
	}
	if g.privs == nil {
		g.privs = map[Resource]map[Action]struct{}{}
		g.seen = map[RoleName]bool{}
	}
	for res, set := range o.privs {
		for a := range set {
			g.grant([]Privilege{{Resource: res, Actions: []Action{a}}})
		}
	}
	for _, r := range o.roles {
		g.noteRole(r)
	}
}

// Allows reports whether g grants action a on resource r, by MongoDB's
// matching rules: a privilege on any resource covers everything; the
// cluster is matched only by the cluster and any resource; a database
// resource is matched by its own and by the any-normal-resource grant
// {db: "", collection: ""}; a collection by its exact namespace, by its
// name in any database, and — unless it is a system collection
// (system.*) — by its database and the any-normal-resource grant. The
// databases local and config are never matched by any-normal-resource.
func (g *Grants) Allows(r Resource, a Action) bool {
	if g == nil {
		return false
	}
	for _, p := range searchList(r) {
		if set, ok := g.privs[p]; ok {
			if _, ok := set[a]; ok {
				return true
			}
			if _, ok := set[AnyAction]; ok {
				return true
			}
		}
	}
	return false
}

// Missing returns the first of required's actions g does not grant, and
// false when g grants them all.
func (g *Grants) Missing(required []Privilege) (Resource, Action, bool) {
	for _, p := range required {
		for _, a := range p.Actions {
			if !g.Allows(p.Resource, a) {
				return p.Resource, a, true
			}
		}
	}
	return Resource{}, "", false
}

// searchList is the grants that can match target, as MongoDB's
// buildResourceSearchList.
func searchList(target Resource) []Resource {
	anyRes := Resource{AnyResource: true}
	switch {
	case target.AnyResource:
		return []Resource{anyRes}
	case target.Cluster:
		return []Resource{anyRes, {Cluster: true}}
	case target.DB == "" || target.Collection == "":
		// A database, or a pattern asked about as itself.
		list := []Resource{anyRes}
		if target.DB != "" && !specialDB(target.DB) {
			list = append(list, Resource{})
		}
		return append(list, target)
	}
	list := []Resource{anyRes}
	if isNormalCollection(target.DB, target.Collection) {
		if !specialDB(target.DB) {
			list = append(list, Resource{})
		}
		list = append(list, Resource{DB: target.DB})
	}
	return append(list, Resource{Collection: target.Collection}, target)
}

// specialDB: local and config hold the server's own collections, which
// grants on "any normal resource" must not reach.
func specialDB(db string) bool { return db == "local" || db == "config" }

// isNormalCollection is MongoDB's NamespaceString::isNormalCollection: not
// a system collection, nor one of local's replset.* collections.
func isNormalCollection(db, coll string) bool {
	if strings.HasPrefix(coll, "system.") {
		return false
	}
	return !(db == "local" && strings.HasPrefix(coll, "replset."))
}

// Privileges returns every privilege g holds, merged by resource, in a
// fixed order: any resource, the cluster, then by database and collection.
func (g *Grants) Privileges() []Privilege {
	if g == nil {
		return nil
	}
	out := make([]Privilege, 0, len(g.privs))
	for res, set := range g.privs {
		p := Privilege{Resource: res}
		for a := range set {
			p.Actions = append(p.Actions, a)
		}
		sort.Slice(p.Actions, func(i, j int) bool { return p.Actions[i] < p.Actions[j] })
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return resourceLess(out[i].Resource, out[j].Resource) })
	return out
}

func resourceLess(a, b Resource) bool {
	if a.AnyResource != b.AnyResource {
		return a.AnyResource
	}
	if a.Cluster != b.Cluster {
		return a.Cluster
	}
	if a.DB != b.DB {
		return a.DB < b.DB
	}
	return a.Collection < b.Collection
}

// Roles returns the roles g came from, those granted and those inherited,
// each once (connectionStatus's authenticatedUserRoles).
func (g *Grants) Roles() []RoleName {
	if g == nil {
		return nil
	}
	return append([]RoleName(nil), g.roles...)
}
