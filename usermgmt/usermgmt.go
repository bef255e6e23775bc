package usermgmt

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// The user management commands: users and user-defined roles, kept in
// admin.system.users and admin.system.roles (authstore.go). They work with
// or without access control, as on mongod; which client may run them is
// the business of the privilege checks that wrap every command.
//
// Passwords are never stored, logged or echoed: createUser and updateUser
// turn them into SCRAM credentials at once.

// Codes of the user management commands that MongoDB names only by number.
const (
	codeRoleExists mongoerr.Code = 51002
	codeUserExists mongoerr.Code = 51003
)

// Commands are the user management commands, for the server's registry.
func (s *Service) Commands() []command.Command {
	return []command.Command{
		{Name: "createUser", Handle: s.serialized(s.createUser)},
		{Name: "updateUser", Handle: s.serialized(s.updateUser)},
		{Name: "dropUser", Handle: s.serialized(s.dropUser)},
		{Name: "dropAllUsersFromDatabase", Handle: s.serialized(s.dropAllUsersFromDatabase)},
		{Name: "usersInfo", Handle: s.usersInfo},
		{Name: "grantRolesToUser", Handle: s.serialized(s.grantRolesToUser)},
		{Name: "revokeRolesFromUser", Handle: s.serialized(s.revokeRolesFromUser)},
		{Name: "createRole", Handle: s.serialized(s.createRole)},
		{Name: "updateRole", Handle: s.serialized(s.updateRole)},
		{Name: "dropRole", Handle: s.serialized(s.dropRole)},
		{Name: "dropAllRolesFromDatabase", Handle: s.serialized(s.dropAllRolesFromDatabase)},
		{Name: "rolesInfo", Handle: s.rolesInfo},
		{Name: "grantPrivilegesToRole", Handle: s.serialized(s.grantPrivilegesToRole)},
		{Name: "revokePrivilegesFromRole", Handle: s.serialized(s.revokePrivilegesFromRole)},
		{Name: "grantRolesToRole", Handle: s.serialized(s.grantRolesToRole)},
		{Name: "revokeRolesFromRole", Handle: s.serialized(s.revokeRolesFromRole)},
		{Name: "_mergeAuthzCollections", Handle: s.serialized(s.mergeAuthzCollections), AdminOnly: true},
	}
}

// serialized runs h under the user management lock. The commands read a
// user or role, change it and write it back, and check other roles on the
// way (existence, cycles): as in MongoDB, which holds an exclusive lock
// for them, one at a time keeps two of them from losing each other's
// change or together building a cycle neither alone would.
func (s *Service) serialized(h command.Handler) command.Handler {
	return func(ctx context.Context, req *command.Request) (bson.Raw, error) {
		s.umc.Lock()
		defer s.umc.Unlock()
		return h(ctx, req)
	}
}

// isBuiltinRole reports whether r is one of MongoDB's built-in roles.
func isBuiltinRole(r auth.RoleName) bool { return auth.IsBuiltinRole(r.Role, r.DB) }

// checkRolesExist fails with RoleNotFound for the first of names that is
// neither built in nor defined.
func (s *Service) checkRolesExist(ctx context.Context, names []auth.RoleName) error {
	st := s.Store()
	for _, n := range names {
		if isBuiltinRole(n) {
			continue
		}
		r, err := st.Role(ctx, n.DB, n.Role)
		if err != nil {
			return err
		}
		if r == nil {
			return mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s", n)
		}
	}
	return nil
}

// resolvedRoles is what a set of roles grants through inheritance.
type resolvedRoles struct {
	roles      []auth.RoleName // every role reached, the starting ones included
	privileges []auth.Privilege
	// restrictions are the authenticationRestrictions of the roles reached.
	restrictions []bson.Raw
}

// resolveRoles walks the role graph from start: what a user holding
// start, or a role inheriting them, has. As in MongoDB, a built-in role
// is a leaf that brings all its privileges, those of the built-in roles it
// includes among them.
func (s *Service) resolveRoles(ctx context.Context, start []auth.RoleName) (resolvedRoles, error) {
	var res resolvedRoles
	seen := map[auth.RoleName]bool{}
	queue := slices.Clone(start)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		res.roles = append(res.roles, n)
		if privs, ok := auth.BuiltinRolePrivileges(n); ok {
			res.privileges = mergePrivileges(res.privileges, privs)
			continue
		}
		r, err := s.Store().Role(ctx, n.DB, n.Role)
		if err != nil {
			return res, err
		}
		if r == nil {
			continue
		}
		res.privileges = mergePrivileges(res.privileges, r.Privileges)
		if r.AuthenticationRestrictions != nil {
			res.restrictions = append(res.restrictions, r.AuthenticationRestrictions)
		}
		queue = append(queue, r.Roles...)
	}
	return res, nil
}

// mergePrivileges adds privileges to privs, joining the actions of those on
// the same resource, as MongoDB's privilege sets do.
func mergePrivileges(privs, add []auth.Privilege) []auth.Privilege {
	for _, p := range add {
		i := slices.IndexFunc(privs, func(q auth.Privilege) bool { return q.Resource == p.Resource })
		if i < 0 {
			privs = append(privs, auth.Privilege{Resource: p.Resource, Actions: slices.Clone(p.Actions)})
			continue
		}
		for _, a := range p.Actions {
			if !slices.Contains(privs[i].Actions, a) {
				privs[i].Actions = append(privs[i].Actions, a)
			}
		}
	}
	return privs
}

// addRoleNames returns names with those of add it lacks.
func addRoleNames(names, add []auth.RoleName) []auth.RoleName {
	for _, n := range add {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// removeRoleNames returns names without those of drop.
func removeRoleNames(names, drop []auth.RoleName) []auth.RoleName {
	return slices.DeleteFunc(names, func(n auth.RoleName) bool { return slices.Contains(drop, n) })
}

// roleArg parses a roles argument of cmd, string entries naming roles of
// db.
func roleArg(cmd, field string, v bson.RawValue, db string) ([]auth.RoleName, error) {
	if v.Type != bson.TypeArray {
		return nil, command.WrongType(cmd, field, v.Type, "array")
	}
	return auth.ParseRoleNames(v, db)
}

// restrictionsArg parses authenticationRestrictions, kept as given; an
// empty array is nil, which MongoDB does not store.
func restrictionsArg(cmd string, v bson.RawValue) (bson.Raw, error) {
	arr, err := command.Array(cmd, "authenticationRestrictions", v)
	if err != nil {
		return nil, err
	}
	if vals, _ := arr.Values(); len(vals) == 0 {
		return nil, nil
	}
	return bson.Raw(slices.Clone(arr)), nil
}
