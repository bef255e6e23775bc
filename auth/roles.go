package auth

import (
	"sort"
)

// IsBuiltinRole reports whether name is a built-in role in db. The
// database roles (read, readWrite, dbAdmin, dbOwner, userAdmin) exist in
// every database but $external; the cluster and *AnyDatabase roles, root,
// backup and restore only in admin, so granting {role: "root", db: "test"}
// names a role that does not exist.
func IsBuiltinRole(name, db string) bool {
	r, ok := builtinRoles[name]
	if !ok || db == "" || db == ExternalDB {
		return false
	}
	return !r.adminOnly || db == "admin"
}

// BuiltinRoleNames lists the built-in roles of db, sorted, as rolesInfo's
// showBuiltinRoles shows them.
func BuiltinRoleNames(db string) []string {
	var out []string
	for name := range builtinRoles {
		if IsBuiltinRole(name, db) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// BuiltinRolePrivileges returns every privilege r grants, its own and
// those of the roles it inherits, merged by resource. ok is false when r
// is not a built-in role.
func BuiltinRolePrivileges(r RoleName) (privs []Privilege, ok bool) {
	if !IsBuiltinRole(r.Role, r.DB) {
		return nil, false
	}
	var all []Privilege
	for _, name := range builtinClosure(r) {
		if def := builtinRoles[name.Role]; def.privileges != nil {
			all = append(all, def.privileges(name.DB)...)
		}
	}
	return mergePrivileges(all), true
}

// BuiltinRoleDirectPrivileges returns the privileges r grants itself, not
// through the roles it inherits (rolesInfo's "privileges" as opposed to
// "inheritedPrivileges").
func BuiltinRoleDirectPrivileges(r RoleName) ([]Privilege, bool) {
	if !IsBuiltinRole(r.Role, r.DB) {
		return nil, false
	}
	def := builtinRoles[r.Role]
	if def.privileges == nil {
		return []Privilege{}, true
	}
	return mergePrivileges(def.privileges(r.DB)), true
}

// BuiltinRoleRoles returns the roles r inherits directly (rolesInfo's
// "roles"); nil when it inherits none or is not built in.
func BuiltinRoleRoles(r RoleName) []RoleName {
	if !IsBuiltinRole(r.Role, r.DB) {
		return nil
	}
	subs := builtinRoles[r.Role].roles
	out := make([]RoleName, len(subs))
	for i, s := range subs {
		out[i] = s
		if s.DB == "" {
			out[i].DB = r.DB
		}
	}
	return out
}

// builtinClosure is r and every built-in role it inherits, each once.
func builtinClosure(r RoleName) []RoleName {
	seen := map[RoleName]bool{}
	var out []RoleName
	var walk func(RoleName)
	walk = func(n RoleName) {
		if seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		for _, s := range BuiltinRoleRoles(n) {
			walk(s)
		}
	}
	walk(r)
	return out
}

// mergePrivileges joins privileges on the same resource and drops repeated
// actions, keeping the resources in first-seen order and each one's
// actions sorted, so that equal grants print alike.
func mergePrivileges(privs []Privilege) []Privilege {
	index := map[Resource]int{}
	sets := []map[Action]struct{}{}
	var out []Privilege
	for _, p := range privs {
		i, ok := index[p.Resource]
		if !ok {
			i = len(out)
			index[p.Resource] = i
			out = append(out, Privilege{Resource: p.Resource})
			sets = append(sets, map[Action]struct{}{})
		}
		for _, a := range p.Actions {
			sets[i][a] = struct{}{}
		}
	}
	for i := range out {
		actions := make([]Action, 0, len(sets[i]))
		for a := range sets[i] {
			actions = append(actions, a)
		}
		sort.Slice(actions, func(x, y int) bool { return actions[x] < actions[y] })
		out[i].Actions = actions
	}
	return out
}
