package usermgmt

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// usersInfo and rolesInfo.

// infoTarget is what usersInfo or rolesInfo asks for: every entry of the
// command's database (all), of every database (allDBs), or the named ones.
type infoTarget struct {
	all, allDBs bool
	names       []auth.RoleName // user or role, and database
}

// parseInfoTarget reads the first value of usersInfo (field "user") or
// rolesInfo (field "role"): 1, a name, {<field>, db}, an array of names
// and documents, or for usersInfo {forAllDBs: true}.
func parseInfoTarget(cmd, field string, v bson.RawValue, db string) (infoTarget, error) {
	var t infoTarget
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		n, _ := command.Float64(cmd, cmd, v)
		if n != 1 {
			return t, mongoerr.New(mongoerr.BadValue, "%s must be 1, a string, an object or an array", cmd)
		}
		t.all = true
		return t, nil
	case bson.TypeEmbeddedDocument:
		d := v.Document()
		if all, ok := d.Lookup("forAllDBs").BooleanOK(); ok && cmd == "usersInfo" {
			if !all {
				return t, mongoerr.New(mongoerr.BadValue, "forAllDBs must be true")
			}
			t.allDBs = true
			return t, nil
		}
	}
	vals := []bson.RawValue{v}
	if arr, ok := v.ArrayOK(); ok {
		vals, _ = arr.Values()
	}
	for _, el := range vals {
		switch el.Type {
		case bson.TypeString:
			t.names = append(t.names, auth.RoleName{Role: el.StringValue(), DB: db})
		case bson.TypeEmbeddedDocument:
			d := el.Document()
			name, okName := d.Lookup(field).StringValueOK()
			in, okDB := d.Lookup("db").StringValueOK()
			if !okName || !okDB {
				return t, mongoerr.New(mongoerr.BadValue, "%s entries must be a name or {%s: <string>, db: <string>}", cmd, field)
			}
			t.names = append(t.names, auth.RoleName{Role: name, DB: in})
		default:
			return t, mongoerr.New(mongoerr.BadValue, "%s entries must be a name or {%s: <string>, db: <string>}, not %s", cmd, field, command.TypeName(el.Type))
		}
	}
	return t, nil
}

// filter returns the query on admin.system.users or system.roles selecting
// t.
func (t infoTarget) filter(db string) bson.D {
	switch {
	case t.allDBs:
		return bson.D{}
	case t.all:
		return bson.D{{Key: "db", Value: db}}
	}
	ids := make(bson.A, 0, len(t.names))
	for _, n := range t.names {
		ids = append(ids, n.DB+"."+n.Role)
	}
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
}

func (s *Service) usersInfo(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "usersInfo"
	target, err := parseInfoTarget(cmd, "user", command.FirstValue(req.Body), req.DB)
	if err != nil {
		return nil, err
	}
	showCustomData := true
	var showCredentials, showPrivileges, showRestrictions bool
	var filter bson.Raw
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "showCredentials":
			showCredentials, err = command.Bool(cmd, "showCredentials", v)
		case "showCustomData":
			showCustomData, err = command.Bool(cmd, "showCustomData", v)
		case "showPrivileges":
			showPrivileges, err = command.Bool(cmd, "showPrivileges", v)
		case "showAuthenticationRestrictions":
			showRestrictions, err = command.Bool(cmd, "showAuthenticationRestrictions", v)
		case "filter":
			filter, err = command.Doc(cmd, "filter", v)
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return nil, err
		}
	}
	if (showPrivileges || showRestrictions) && (target.all || target.allDBs || filter != nil) {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Privilege or restriction details require exact-match usersInfo queries.")
	}
	query := target.filter(req.DB)
	if filter != nil {
		query = bson.D{{Key: "$and", Value: bson.A{query, filter}}}
	}
	docs, err := s.authDocs(ctx, UsersCollection, query, bson.D{{Key: "user", Value: 1}, {Key: "db", Value: 1}})
	if err != nil {
		return nil, err
	}
	users := make(bson.A, 0, len(docs))
	for _, doc := range docs {
		out, err := s.userInfo(ctx, doc, showCredentials, showCustomData, showPrivileges, showRestrictions)
		if err != nil {
			return nil, err
		}
		users = append(users, out)
	}
	return command.OK(bson.E{Key: "users", Value: users})
}

// userInfo is one entry of usersInfo's reply, as MongoDB builds it. Without
// showPrivileges or showAuthenticationRestrictions: the stored document
// without credentials (unless showCredentials), customData (unless
// showCustomData) and authenticationRestrictions, then the names of the
// mechanisms it has credentials for. With either: the mechanisms in the
// credentials' place, the restrictions only when asked (an empty array
// when there are none), then what the user's roles grant.
func (s *Service) userInfo(ctx context.Context, doc bson.Raw, showCredentials, showCustomData, showPrivileges, showRestrictions bool) (bson.D, error) {
	detailed := showPrivileges || showRestrictions
	var out bson.D
	mechs := bson.A{}
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	sawRestrictions := false
	for _, e := range elems {
		switch e.Key() {
		case "credentials":
			creds, _ := e.Value().DocumentOK()
			ces, _ := creds.Elements()
			for _, c := range ces {
				mechs = append(mechs, c.Key())
			}
			if detailed {
				out = append(out, bson.E{Key: "mechanisms", Value: mechs})
			}
			if !showCredentials {
				continue
			}
		case "customData":
			if !showCustomData {
				continue
			}
		case "authenticationRestrictions":
			sawRestrictions = true
			if !showRestrictions {
				continue
			}
		}
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	if !detailed {
		return append(out, bson.E{Key: "mechanisms", Value: mechs}), nil
	}
	if showRestrictions && !sawRestrictions {
		out = append(out, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
	}
	u, err := auth.ParseUser(doc)
	if err != nil {
		return nil, err
	}
	res, err := s.resolveRoles(ctx, u.Roles)
	if err != nil {
		return nil, err
	}
	return append(out,
		bson.E{Key: "inheritedRoles", Value: auth.RoleNamesArray(res.roles)},
		bson.E{Key: "inheritedPrivileges", Value: auth.PrivilegesArray(res.privileges)},
		bson.E{Key: "inheritedAuthenticationRestrictions", Value: restrictionsArray(res.restrictions)}), nil
}

// restrictionsArray lists the authenticationRestrictions arrays of roles.
func restrictionsArray(rs []bson.Raw) bson.A {
	arr := make(bson.A, 0, len(rs))
	for _, r := range rs {
		arr = append(arr, auth.ArrayValue(r))
	}
	return arr
}

func (s *Service) rolesInfo(ctx context.Context, req *command.Request) (bson.Raw, error) {
	const cmd = "rolesInfo"
	target, err := parseInfoTarget(cmd, "role", command.FirstValue(req.Body), req.DB)
	if err != nil {
		return nil, err
	}
	var showPrivileges, showBuiltin, showRestrictions, asFragment bool
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "showPrivileges":
			if str, ok := v.StringValueOK(); ok {
				if str != "asUserFragment" {
					return nil, mongoerr.New(mongoerr.BadValue, "showPrivileges must be a boolean or \"asUserFragment\", not \"%s\"", str)
				}
				asFragment = true
				continue
			}
			showPrivileges, err = command.Bool(cmd, "showPrivileges", v)
		case "showBuiltinRoles":
			showBuiltin, err = command.Bool(cmd, "showBuiltinRoles", v)
		case "showAuthenticationRestrictions":
			showRestrictions, err = command.Bool(cmd, "showAuthenticationRestrictions", v)
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return nil, err
		}
	}
	if asFragment {
		if target.all {
			return nil, mongoerr.New(mongoerr.IllegalOperation, "Cannot get user fragment for all roles in a database")
		}
		return s.rolesAsUserFragment(ctx, target.names, showRestrictions)
	}
	var roles bson.A
	if target.all && showBuiltin {
		for _, name := range auth.BuiltinRoleNames(req.DB) {
			roles = append(roles, builtinRoleInfo(auth.RoleName{Role: name, DB: req.DB}, showPrivileges, showRestrictions, true))
		}
	}
	docs, err := s.authDocs(ctx, RolesCollection, target.filter(req.DB), nil)
	if err != nil {
		return nil, err
	}
	if target.all {
		for _, doc := range docs {
			info, err := s.roleInfo(ctx, doc, showPrivileges, showRestrictions, true)
			if err != nil {
				return nil, err
			}
			roles = append(roles, info)
		}
	} else {
		// Named roles come in the order asked; built-in ones have no
		// document, and missing ones are left out.
		byName := map[auth.RoleName]bson.Raw{}
		for _, doc := range docs {
			byName[auth.RoleName{Role: doc.Lookup("role").StringValue(), DB: doc.Lookup("db").StringValue()}] = doc
		}
		for _, n := range target.names {
			if isBuiltinRole(n) {
				roles = append(roles, builtinRoleInfo(n, showPrivileges, showRestrictions, false))
				continue
			}
			doc, ok := byName[n]
			if !ok {
				continue
			}
			info, err := s.roleInfo(ctx, doc, showPrivileges, showRestrictions, false)
			if err != nil {
				return nil, err
			}
			roles = append(roles, info)
		}
	}
	if roles == nil {
		roles = bson.A{}
	}
	return command.OK(bson.E{Key: "roles", Value: roles})
}

// roleInfo is one user-defined role in rolesInfo's reply, as MongoDB builds
// it: the stored document without privileges (unless showPrivileges) and
// with its authenticationRestrictions wrapped in an array (only with
// showAuthenticationRestrictions), then isBuiltin (first when listing a
// database's roles, last when naming them) and what the role inherits.
func (s *Service) roleInfo(ctx context.Context, doc bson.Raw, showPrivileges, showRestrictions, listing bool) (bson.D, error) {
	r, err := auth.ParseRole(doc)
	if err != nil {
		return nil, err
	}
	var out bson.D
	elems, err := doc.Elements()
	if err != nil {
		return nil, err
	}
	sawRestrictions := false
	for _, e := range elems {
		switch e.Key() {
		case "privileges":
			if !showPrivileges {
				continue
			}
		case "authenticationRestrictions":
			sawRestrictions = true
			if showRestrictions {
				out = append(out, bson.E{Key: e.Key(), Value: bson.A{e.Value()}})
			}
			continue
		}
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	if showRestrictions && !sawRestrictions {
		out = append(out, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
	}
	if listing {
		out = append(out, bson.E{Key: "isBuiltin", Value: false})
	}
	res, err := s.resolveRoles(ctx, r.Roles)
	if err != nil {
		return nil, err
	}
	out = append(out, bson.E{Key: "inheritedRoles", Value: auth.RoleNamesArray(res.roles)})
	if showPrivileges {
		// The role's own privileges, then those it inherits, unmerged.
		out = append(out, bson.E{Key: "inheritedPrivileges", Value: append(auth.PrivilegesArray(r.Privileges), auth.PrivilegesArray(res.privileges)...)})
	}
	if showRestrictions {
		inherited := bson.A{}
		if r.AuthenticationRestrictions != nil {
			inherited = append(inherited, auth.ArrayValue(r.AuthenticationRestrictions))
		}
		out = append(out, bson.E{Key: "inheritedAuthenticationRestrictions", Value: append(inherited, restrictionsArray(res.restrictions)...)})
	}
	if !listing {
		out = append(out, bson.E{Key: "isBuiltin", Value: false})
	}
	return out, nil
}

// builtinRoleInfo is a built-in role in rolesInfo's reply, in MongoDB's
// two shapes: when listing a database's roles, and when named. As in
// MongoDB, a built-in role shows no roles: its privileges and its
// inherited privileges are both all it grants.
func builtinRoleInfo(n auth.RoleName, showPrivileges, showRestrictions, listing bool) bson.D {
	all, _ := auth.BuiltinRolePrivileges(n)
	privs := auth.PrivilegesArray(all)
	var out bson.D
	if listing {
		out = bson.D{{Key: "role", Value: n.Role}, {Key: "db", Value: n.DB}, {Key: "isBuiltin", Value: true},
			{Key: "roles", Value: bson.A{}}, {Key: "inheritedRoles", Value: bson.A{}}}
		if showPrivileges {
			out = append(out, bson.E{Key: "privileges", Value: privs}, bson.E{Key: "inheritedPrivileges", Value: privs})
		}
		if showRestrictions {
			out = append(out, bson.E{Key: "authenticationRestrictions", Value: bson.A{}},
				bson.E{Key: "inheritedAuthenticationRestrictions", Value: bson.A{}})
		}
		return out
	}
	out = bson.D{{Key: "db", Value: n.DB}, {Key: "role", Value: n.Role}, {Key: "roles", Value: bson.A{}}}
	if showPrivileges {
		out = append(out, bson.E{Key: "privileges", Value: privs})
	}
	if showRestrictions {
		out = append(out, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
	}
	out = append(out, bson.E{Key: "inheritedRoles", Value: bson.A{}})
	if showPrivileges {
		out = append(out, bson.E{Key: "inheritedPrivileges", Value: privs})
	}
	if showRestrictions {
		out = append(out, bson.E{Key: "inheritedAuthenticationRestrictions", Value: bson.A{}})
	}
	return append(out, bson.E{Key: "isBuiltin", Value: true})
}

// rolesAsUserFragment answers rolesInfo with showPrivileges:
// "asUserFragment": the roles as the part of a user document a user
// holding them would have, {roles, inheritedRoles, inheritedPrivileges}.
func (s *Service) rolesAsUserFragment(ctx context.Context, names []auth.RoleName, showRestrictions bool) (bson.Raw, error) {
	res, err := s.resolveRoles(ctx, names)
	if err != nil {
		return nil, err
	}
	fragment := bson.D{
		{Key: "roles", Value: auth.RoleNamesArray(names)},
		{Key: "inheritedRoles", Value: auth.RoleNamesArray(res.roles)},
		{Key: "inheritedPrivileges", Value: auth.PrivilegesArray(res.privileges)},
	}
	if showRestrictions {
		fragment = append(fragment, bson.E{Key: "inheritedAuthenticationRestrictions", Value: restrictionsArray(res.restrictions)})
	}
	return command.OK(bson.E{Key: "userFragment", Value: fragment})
}
