package auth

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// userAdminRule is what the user and role management commands need, as
// MongoDB checks them: the command's own action on the database, and to
// hand out a role or privilege, grantRole on the database it belongs to
// (on admin for privileges on the cluster or on every database).
func userAdminRule(cmd, db string, body bson.Raw) ([]Privilege, error) {
	here := Resource{DB: db}
	var privs []Privilege
	need := func(r Resource, a ...string) { privs = append(privs, Privilege{Resource: r, Actions: acts(a...)}) }
	roles := func(field, action string) error {
		v := body.Lookup(field)
		if v.Type == 0 {
			return nil
		}
		names, err := roleNamesArg(db, v)
		if err != nil {
			return fmt.Errorf("auth: %s %s: %w", cmd, field, err)
		}
		for _, r := range names {
			need(Resource{DB: r.DB}, action)
		}
		return nil
	}
	privileges := func(action string) error {
		arr, ok := body.Lookup("privileges").ArrayOK()
		if !ok {
			return nil
		}
		values, _ := arr.Values()
		for _, v := range values {
			p, ok := v.DocumentOK()
			if !ok {
				return fmt.Errorf("auth: %s: a privilege must be a document", cmd)
			}
			res, _ := p.Lookup("resource").DocumentOK()
			d, okDB := res.Lookup("db").StringValueOK()
			if okDB && d != "" {
				need(Resource{DB: d}, action)
			} else {
				need(Resource{DB: "admin"}, action)
			}
		}
		return nil
	}
	restrictions := func() {
		if body.Lookup("authenticationRestrictions").Type != 0 {
			need(here, "setAuthenticationRestriction")
		}
	}

	var err error
	switch cmd {
	case "createUser":
		need(here, "createUser")
		err = roles("roles", "grantRole")
		restrictions()
	case "updateUser":
		if body.Lookup("pwd").Type != 0 {
			need(here, "changePassword")
		}
		if body.Lookup("customData").Type != 0 {
			need(here, "changeCustomData")
		}
		if body.Lookup("roles").Type != 0 {
			// Replacing the roles may revoke any role at all.
			need(Resource{}, "revokeRole")
			err = roles("roles", "grantRole")
		}
		restrictions()
	case "grantRolesToUser", "grantRolesToRole":
		err = roles("roles", "grantRole")
	case "revokeRolesFromUser", "revokeRolesFromRole":
		err = roles("roles", "revokeRole")
	case "createRole":
		need(here, "createRole")
		if err = roles("roles", "grantRole"); err == nil {
			err = privileges("grantRole")
		}
		restrictions()
	case "updateRole":
		// It may revoke any role or privilege at all.
		need(Resource{}, "revokeRole")
		if err = roles("roles", "grantRole"); err == nil {
			err = privileges("grantRole")
		}
		restrictions()
	case "grantPrivilegesToRole":
		err = privileges("grantRole")
	case "revokePrivilegesFromRole":
		err = privileges("revokeRole")
	case "usersInfo":
		v := body.Lookup(cmd)
		if doc, ok := v.DocumentOK(); ok && trueValue(doc.Lookup("forAllDBs")) {
			need(Resource{Cluster: true}, "viewUser")
			break
		}
		err = infoRule(db, v, "user", "viewUser", need)
	case "rolesInfo":
		err = infoRule(db, body.Lookup(cmd), "role", "viewRole", need)
	}
	if err != nil {
		return nil, err
	}
	return privs, nil
}

// infoRule: usersInfo and rolesInfo need their view action on the
// database of each user or role asked about (usersInfo's forAllDBs, on the
// cluster, is the caller's).
func infoRule(db string, v bson.RawValue, nameField, action string, need func(Resource, ...string)) error {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		need(Resource{DB: db}, action)
		return nil
	}
	names, err := namesArg(db, v, nameField)
	if err != nil {
		return fmt.Errorf("auth: %sInfo: %w", nameField, err)
	}
	for _, n := range names {
		need(Resource{DB: n.DB}, action)
	}
	return nil
}

// roleNamesArg reads a roles array: names of the command's database or
// {role, db} documents.
func roleNamesArg(db string, v bson.RawValue) ([]RoleName, error) {
	return namesArg(db, v, "role")
}

// namesArg reads one name or an array of names, each a string (of db) or a
// document {<field>: name, db: d}.
func namesArg(db string, v bson.RawValue, field string) ([]RoleName, error) {
	var values []bson.RawValue
	if arr, ok := v.ArrayOK(); ok {
		values, _ = arr.Values()
	} else {
		values = []bson.RawValue{v}
	}
	out := make([]RoleName, 0, len(values))
	for _, e := range values {
		if s, ok := e.StringValueOK(); ok {
			out = append(out, RoleName{Role: s, DB: db})
			continue
		}
		doc, ok := e.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("names must be strings or {%s, db} documents", field)
		}
		name, ok1 := doc.Lookup(field).StringValueOK()
		d, ok2 := doc.Lookup("db").StringValueOK()
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("names must be strings or {%s, db} documents", field)
		}
		out = append(out, RoleName{Role: name, DB: d})
	}
	return out, nil
}

// OwnUserRequest is a command about the client's own user that MongoDB
// lets through without the usual privileges: updateUser changing only the
// user's password or custom data (with changeOwnPassword /
// changeOwnCustomData on the user's database), and usersInfo asking only
// about the user itself (with nothing).
type OwnUserRequest struct {
	User, DB string
	// Actions are needed on Resource{DB: DB}; none for usersInfo.
	Actions []Action
}

// OwnUserException reports whether the command is one that the user it
// names may run on itself. The server allows it when the connection is
// authenticated as User on DB and its grants allow Actions on that
// database; otherwise Required applies.
func OwnUserException(cmd, db string, body bson.Raw) (OwnUserRequest, bool) {
	switch cmd {
	case "updateUser":
		name, ok := body.Lookup(cmd).StringValueOK()
		if !ok {
			return OwnUserRequest{}, false
		}
		req := OwnUserRequest{User: name, DB: db}
		elems, err := body.Elements()
		if err != nil {
			return OwnUserRequest{}, false
		}
		for _, e := range elems[1:] {
			switch e.Key() {
			case "pwd":
				req.Actions = append(req.Actions, "changeOwnPassword")
			case "customData":
				req.Actions = append(req.Actions, "changeOwnCustomData")
			case "digestPassword", "mechanisms", "writeConcern", "comment", "$db",
				"lsid", "$clusterTime", "$readPreference", "txnNumber", "apiVersion",
				"apiStrict", "apiDeprecationErrors":
			default:
				return OwnUserRequest{}, false // roles, restrictions: not one's own to change
			}
		}
		if len(req.Actions) == 0 {
			return OwnUserRequest{}, false
		}
		return req, true
	case "usersInfo":
		v := body.Lookup(cmd)
		if _, ok := v.DocumentOK(); ok && trueValue(v.Document().Lookup("forAllDBs")) {
			return OwnUserRequest{}, false
		}
		names, err := namesArg(db, v, "user")
		if err != nil || len(names) == 0 {
			return OwnUserRequest{}, false
		}
		for _, n := range names[1:] {
			if n != names[0] {
				return OwnUserRequest{}, false
			}
		}
		return OwnUserRequest{User: names[0].Role, DB: names[0].DB}, true
	}
	return OwnUserRequest{}, false
}

// mergeAuthzRule is _mergeAuthzCollections', mongorestore's way of loading
// users and roles, as MongoDB checks it: creating users and roles and
// granting and revoking roles on every database (dropping them too with
// drop), and find on each temporary collection it reads.
func mergeAuthzRule(_ string, body bson.Raw) ([]Privilege, error) {
	a := acts("createUser", "createRole", "grantRole", "revokeRole")
	if trueValue(body.Lookup("drop")) {
		a = append(a, acts("dropUser", "dropRole")...)
	}
	privs := []Privilege{onAnyNormal(a)}
	for _, field := range []string{"tempUsersCollection", "tempRolesCollection"} {
		v := body.Lookup(field)
		if v.Type == 0 {
			continue
		}
		ns, ok := v.StringValueOK()
		if !ok {
			return nil, fmt.Errorf("auth: _mergeAuthzCollections: %s must be a string", field)
		}
		if ns == "" {
			continue
		}
		r, ok := parseNamespace(ns)
		if !ok {
			return nil, fmt.Errorf("auth: _mergeAuthzCollections: %s is not a namespace: %q", field, ns)
		}
		privs = append(privs, Privilege{Resource: r, Actions: acts("find")})
	}
	return privs, nil
}
