package usermgmt

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// The commands on user-defined roles.

// roleArgs are the fields createRole and updateRole take.
type roleArgs struct {
	name                    string
	privileges              []auth.Privilege
	hasPrivileges, hasRoles bool
	roles                   []auth.RoleName
	restrictions            bson.Raw
	hasRestrictions         bool
}

func parseRoleArgs(cmd string, req *command.Request) (roleArgs, error) {
	var a roleArgs
	var err error
	if a.name, err = command.String(cmd, cmd, command.FirstValue(req.Body)); err != nil {
		return a, err
	}
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "privileges":
			if v.Type != bson.TypeArray {
				return a, command.WrongType(cmd, "privileges", v.Type, "array")
			}
			a.privileges, err = auth.ParsePrivileges(v)
			a.hasPrivileges = true
		case "roles":
			a.roles, err = roleArg(cmd, "roles", v, req.DB)
			a.hasRoles = true
		case "authenticationRestrictions":
			a.restrictions, err = restrictionsArg(cmd, v)
			a.hasRestrictions = true
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// checkRoleContents refuses what a role of db may not hold: a role outside
// admin grants only privileges on its own database and inherits only roles
// of its own database.
func checkRoleContents(db string, privs []auth.Privilege, roles []auth.RoleName) error {
	if db == DB {
		return nil
	}
	for _, p := range privs {
		if p.Resource.Cluster || p.Resource.AnyResource || p.Resource.DB != db {
			return mongoerr.New(mongoerr.InvalidRoleModification,
				"Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", db)
		}
	}
	for _, r := range roles {
		if r.DB != db {
			return mongoerr.New(mongoerr.InvalidRoleModification,
				"Roles on the '%s' database cannot be granted roles from other databases", db)
		}
	}
	return nil
}

// checkGrantRoles is MongoDB's checkOkayToGrantRolesToRole: role may not
// inherit itself, a role outside admin only roles of its own database, and
// the roles must exist and not lead back to role.
func (s *Service) checkGrantRoles(ctx context.Context, role auth.RoleName, sub []auth.RoleName) error {
	for _, r := range sub {
		if r == role {
			return mongoerr.New(mongoerr.InvalidRoleModification, "Cannot grant role %s to itself.", role)
		}
	}
	if err := checkRoleContents(role.DB, nil, sub); err != nil {
		return err
	}
	if err := s.checkRolesExist(ctx, sub); err != nil {
		me, _ := mongoerr.As(err)
		return mongoerr.New(me.Code, "Cannot grant roles to '%s': %s", role, me.Msg)
	}
	res, err := s.resolveRoles(ctx, sub)
	if err != nil {
		return err
	}
	if slices.Contains(res.roles, role) {
		return mongoerr.New(mongoerr.InvalidRoleModification, "Granting roles to %s would introduce a cycle in the role graph", role)
	}
	return nil
}

func (s *Service) createRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "createRole"
	a, err := parseRoleArgs(cmd, req)
	if err != nil {
		return nil, err
	}
	name := auth.RoleName{Role: a.name, DB: req.DB}
	switch {
	case !a.hasPrivileges:
		return nil, command.MissingField(cmd, "privileges")
	case !a.hasRoles:
		return nil, command.MissingField(cmd, "roles")
	case a.name == "":
		return nil, mongoerr.New(mongoerr.BadValue, "Role name must be non-empty")
	case req.DB == "local":
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot create roles in the local database")
	case req.DB == auth.ExternalDB:
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot create roles in the $external database")
	case isBuiltinRole(name):
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot create roles with the same name as a built-in role")
	}
	if err := s.checkGrantRoles(ctx, name, a.roles); err != nil {
		return nil, err
	}
	if err := checkRoleContents(req.DB, a.privileges, nil); err != nil {
		return nil, err
	}
	if existing, err := s.Store().Role(ctx, name.DB, name.Role); err != nil {
		return nil, err
	} else if existing != nil {
		return nil, mongoerr.New(codeRoleExists, "Role \"%s\" already exists", name)
	}
	r := &auth.Role{Name: a.name, DB: req.DB, Privileges: a.privileges, Roles: a.roles,
		AuthenticationRestrictions: a.restrictions}
	err = s.insertAuthDoc(ctx, RolesCollection, auth.MarshalRole(r), mongoerr.New(codeRoleExists, "Role \"%s\" already exists", name))
	if err != nil {
		return nil, err
	}
	return command.OK()
}

// storedRole returns the user-defined role name of db, RoleNotFound if
// there is none.
func (s *Service) storedRole(ctx context.Context, db, name string) (*auth.Role, error) {
	r, err := s.Store().Role(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, mongoerr.New(mongoerr.RoleNotFound, "Could not find role: %s@%s", name, db)
	}
	return r, nil
}

// modifiableRole is storedRole for the commands that change a role, which
// refuse built-in roles first.
func (s *Service) modifiableRole(ctx context.Context, db, name string) (*auth.Role, error) {
	if n := (auth.RoleName{Role: name, DB: db}); isBuiltinRole(n) {
		return nil, mongoerr.New(mongoerr.BadValue, "%s is a built-in role and cannot be modified", n)
	}
	return s.storedRole(ctx, db, name)
}

// saveRole replaces r's document.
func (s *Service) saveRole(ctx context.Context, r *auth.Role) error {
	found, err := s.replaceAuthDoc(ctx, RolesCollection, auth.MarshalRole(r))
	if err == nil && !found {
		err = mongoerr.New(mongoerr.RoleNotFound, "Role %s@%s not found", r.Name, r.DB)
	}
	return err
}

func (s *Service) updateRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "updateRole"
	a, err := parseRoleArgs(cmd, req)
	if err != nil {
		return nil, err
	}
	if !a.hasPrivileges && !a.hasRoles && !a.hasRestrictions {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateRole")
	}
	// A built-in role has no document: RoleNotFound, as in MongoDB.
	r, err := s.storedRole(ctx, req.DB, a.name)
	if err != nil {
		return nil, err
	}
	if a.hasRoles {
		if err := s.checkGrantRoles(ctx, auth.RoleName{Role: r.Name, DB: r.DB}, a.roles); err != nil {
			return nil, err
		}
		r.Roles = a.roles
	}
	if err := checkRoleContents(req.DB, a.privileges, nil); err != nil {
		return nil, err
	}
	if a.hasPrivileges {
		r.Privileges = a.privileges
	}
	if a.hasRestrictions {
		r.AuthenticationRestrictions = a.restrictions
	}
	if err := s.saveRole(ctx, r); err != nil {
		return nil, err
	}
	return command.OK()
}

func (s *Service) dropRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "dropRole"
	name, err := command.String(cmd, cmd, command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	for key := range command.Args(req.Body) {
		return nil, command.UnknownField(cmd, key)
	}
	if _, err := s.modifiableRole(ctx, req.DB, name); err != nil {
		return nil, err
	}
	// As MongoDB, first take the role from every user and role holding it.
	held := bson.D{{Key: "role", Value: name}, {Key: "db", Value: req.DB}}
	if err := s.forgetRoles(ctx, held); err != nil {
		return nil, err
	}
	if _, err := s.deleteAuthDocs(ctx, RolesCollection, bson.D{{Key: "_id", Value: req.DB + "." + name}}); err != nil {
		return nil, err
	}
	return command.OK()
}

func (s *Service) dropAllRolesFromDatabase(ctx context.Context, req *command.Request) (bson.Raw, error) {
	for key := range command.Args(req.Body) {
		return nil, command.UnknownField("dropAllRolesFromDatabase", key)
	}
	if err := s.forgetRoles(ctx, bson.D{{Key: "db", Value: req.DB}}); err != nil {
		return nil, err
	}
	n, err := s.deleteAuthDocs(ctx, RolesCollection, bson.D{{Key: "db", Value: req.DB}})
	if err != nil {
		return nil, err
	}
	return command.OK(bson.E{Key: "n", Value: int32(n)})
}

// forgetRoles removes the roles matching match ({role, db} or {db}) from
// the roles of every user and user-defined role.
func (s *Service) forgetRoles(ctx context.Context, match bson.D) error {
	filter := bson.D{{Key: "roles", Value: bson.D{{Key: "$elemMatch", Value: match}}}}
	pull := bson.D{{Key: "$pull", Value: bson.D{{Key: "roles", Value: match}}}}
	if err := s.updateAuthDocs(ctx, UsersCollection, filter, pull); err != nil {
		return err
	}
	return s.updateAuthDocs(ctx, RolesCollection, filter, pull)
}

func (s *Service) grantPrivilegesToRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	return s.changeRolePrivileges(ctx, req, "grantPrivilegesToRole", mergePrivileges)
}

func (s *Service) revokePrivilegesFromRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	return s.changeRolePrivileges(ctx, req, "revokePrivilegesFromRole", subtractPrivileges)
}

// changeRolePrivileges runs grantPrivilegesToRole or
// revokePrivilegesFromRole, whose change is apply.
func (s *Service) changeRolePrivileges(ctx context.Context, req *command.Request, cmd string, apply func(have, change []auth.Privilege) []auth.Privilege) (bson.Raw, error) {
	name, err := command.String(cmd, cmd, command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	var privs []auth.Privilege
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "privileges":
			if v.Type != bson.TypeArray {
				return nil, command.WrongType(cmd, "privileges", v.Type, "array")
			}
			privs, err = auth.ParsePrivileges(v)
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(privs) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "%s command requires a non-empty \"privileges\" array", cmd)
	}
	r, err := s.modifiableRole(ctx, req.DB, name)
	if err != nil {
		return nil, err
	}
	if err := checkRoleContents(req.DB, privs, nil); err != nil {
		return nil, err
	}
	r.Privileges = apply(r.Privileges, privs)
	if err := s.saveRole(ctx, r); err != nil {
		return nil, err
	}
	return command.OK()
}

// subtractPrivileges removes the actions of drop from privs, and the
// privileges left without actions.
func subtractPrivileges(privs, drop []auth.Privilege) []auth.Privilege {
	for _, d := range drop {
		for i := range privs {
			if privs[i].Resource == d.Resource {
				privs[i].Actions = slices.DeleteFunc(privs[i].Actions, func(a auth.Action) bool { return slices.Contains(d.Actions, a) })
			}
		}
	}
	return slices.DeleteFunc(privs, func(p auth.Privilege) bool { return len(p.Actions) == 0 })
}

func (s *Service) grantRolesToRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "grantRolesToRole"
	name, roles, err := namedRolesArgs(cmd, req)
	if err != nil {
		return nil, err
	}
	if n := (auth.RoleName{Role: name, DB: req.DB}); isBuiltinRole(n) {
		return nil, mongoerr.New(mongoerr.BadValue, "%s is a built-in role and cannot be modified", n)
	}
	if err := s.checkGrantRoles(ctx, auth.RoleName{Role: name, DB: req.DB}, roles); err != nil {
		return nil, err
	}
	r, err := s.storedRole(ctx, req.DB, name)
	if err != nil {
		return nil, err
	}
	r.Roles = addRoleNames(r.Roles, roles)
	if err := s.saveRole(ctx, r); err != nil {
		return nil, err
	}
	return command.OK()
}

func (s *Service) revokeRolesFromRole(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "revokeRolesFromRole"
	name, roles, err := namedRolesArgs(cmd, req)
	if err != nil {
		return nil, err
	}
	r, err := s.modifiableRole(ctx, req.DB, name)
	if err != nil {
		return nil, err
	}
	// Unlike revokeRolesFromUser, MongoDB does not check that the revoked
	// roles exist.
	r.Roles = removeRoleNames(r.Roles, roles)
	if err := s.saveRole(ctx, r); err != nil {
		return nil, err
	}
	return command.OK()
}
