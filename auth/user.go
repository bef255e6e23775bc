package auth

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// The documents of admin.system.users and admin.system.roles, in the shapes
// MongoDB stores them, so that mongodump, mongorestore and any tool reading
// those collections see what they would see on mongod:
//
//	{_id: "db.name", userId: UUID, user, db,
//	 credentials: {"SCRAM-SHA-1": {iterationCount, salt, storedKey, serverKey}, ...},
//	 customData?, authenticationRestrictions?, roles: [{role, db}]}
//
//	{_id: "db.role", role, db, privileges: [{resource, actions}],
//	 roles: [{role, db}], authenticationRestrictions?}
//
// Salts and keys are base64 strings, as MongoDB keeps them.

// NewScramSHA1CredentialFromDigest is NewScramCredential for SCRAM-SHA-1
// when the client has already digested the password (createUser's
// digestPassword: false): digest is the hex MD5 of "user:mongo:password".
func NewScramSHA1CredentialFromDigest(user, digest string, iterations int) (ScramCredential, error) {
	if iterations == 0 {
		iterations = DefaultSHA1Iterations
	}
	salt := make([]byte, sha1SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, fmt.Errorf("auth: salt for %s: %w", ScramSHA1, err)
	}
	return deriveCredential(scram.SHA1, user, digest, salt, iterations)
}

// String is the role's name as MongoDB writes it in messages, "role@db".
func (r RoleName) String() string { return r.Role + "@" + r.DB }

// MarshalUser returns u as a document of admin.system.users.
func MarshalUser(u *User) bson.Raw {
	doc := bson.D{
		{Key: "_id", Value: u.DB + "." + u.Name},
		{Key: "userId", Value: u.UserID},
		{Key: "user", Value: u.Name},
		{Key: "db", Value: u.DB},
	}
	if len(u.Credentials) > 0 {
		creds := bson.D{}
		for _, m := range []Mechanism{ScramSHA1, ScramSHA256} {
			c, ok := u.Credentials[m]
			if !ok {
				continue
			}
			creds = append(creds, bson.E{Key: string(m), Value: bson.D{
				{Key: "iterationCount", Value: int32(c.IterationCount)},
				{Key: "salt", Value: base64.StdEncoding.EncodeToString(c.Salt)},
				{Key: "storedKey", Value: base64.StdEncoding.EncodeToString(c.StoredKey)},
				{Key: "serverKey", Value: base64.StdEncoding.EncodeToString(c.ServerKey)},
			}})
		}
		doc = append(doc, bson.E{Key: "credentials", Value: creds})
	} else {
		// MongoDB stores {"external": true} for users of $external.
		doc = append(doc, bson.E{Key: "credentials", Value: bson.D{{Key: "external", Value: true}}})
	}
	if u.AuthenticationRestrictions != nil {
		doc = append(doc, bson.E{Key: "authenticationRestrictions", Value: ArrayValue(u.AuthenticationRestrictions)})
	}
	if u.CustomData != nil {
		doc = append(doc, bson.E{Key: "customData", Value: u.CustomData})
	}
	doc = append(doc, bson.E{Key: "roles", Value: RoleNamesArray(u.Roles)})
	return mustMarshal(doc)
}

// ParseUser reads a document of admin.system.users. Mechanisms are those
// the document has credentials for.
func ParseUser(doc bson.Raw) (*User, error) {
	u := &User{}
	var err error
	if u.ID, err = stringField(doc, "_id"); err != nil {
		return nil, err
	}
	if u.Name, err = stringField(doc, "user"); err != nil {
		return nil, err
	}
	if u.DB, err = stringField(doc, "db"); err != nil {
		return nil, err
	}
	if v, err := doc.LookupErr("userId"); err == nil {
		st, data, ok := v.BinaryOK()
		if !ok {
			return nil, fmt.Errorf("auth: user %s: userId is %s, not binary", u.ID, v.Type)
		}
		u.UserID = bson.Binary{Subtype: st, Data: slices.Clone(data)}
	}
	if v, err := doc.LookupErr("credentials"); err == nil {
		creds, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("auth: user %s: credentials is %s, not an object", u.ID, v.Type)
		}
		if u.Credentials, err = parseCredentials(creds); err != nil {
			return nil, fmt.Errorf("auth: user %s: %w", u.ID, err)
		}
		for _, m := range []Mechanism{ScramSHA1, ScramSHA256} {
			if _, ok := u.Credentials[m]; ok {
				u.Mechanisms = append(u.Mechanisms, m)
			}
		}
		if ext, ok := creds.Lookup("external").BooleanOK(); ok && ext {
			u.Mechanisms = append(u.Mechanisms, X509)
		}
	}
	roles, err := doc.LookupErr("roles")
	if err != nil {
		return nil, fmt.Errorf("auth: user %s has no roles", u.ID)
	}
	if u.Roles, err = storedRoleNames(roles); err != nil {
		return nil, fmt.Errorf("auth: user %s: %w", u.ID, err)
	}
	if v, err := doc.LookupErr("customData"); err == nil {
		if d, ok := v.DocumentOK(); ok {
			u.CustomData = slices.Clone(d)
		}
	}
	if v, err := doc.LookupErr("authenticationRestrictions"); err == nil {
		if a, ok := v.ArrayOK(); ok {
			u.AuthenticationRestrictions = bson.Raw(slices.Clone(a))
		}
	}
	return u, nil
}

func parseCredentials(creds bson.Raw) (map[Mechanism]ScramCredential, error) {
	out := map[Mechanism]ScramCredential{}
	for _, m := range []Mechanism{ScramSHA1, ScramSHA256} {
		v, err := creds.LookupErr(string(m))
		if err != nil {
			continue
		}
		d, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("%s credentials are %s, not an object", m, v.Type)
		}
		var c ScramCredential
		n, ok := d.Lookup("iterationCount").AsInt64OK()
		if !ok || n <= 0 {
			return nil, fmt.Errorf("%s credentials lack a positive iterationCount", m)
		}
		c.IterationCount = int(n)
		for _, f := range []struct {
			name string
			dst  *[]byte
		}{{"salt", &c.Salt}, {"storedKey", &c.StoredKey}, {"serverKey", &c.ServerKey}} {
			s, ok := d.Lookup(f.name).StringValueOK()
			if !ok {
				return nil, fmt.Errorf("%s credentials lack %s", m, f.name)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("%s credentials: %s is not base64: %w", m, f.name, err)
			}
			*f.dst = b
		}
		out[m] = c
	}
	return out, nil
}

// MarshalRole returns r as a document of admin.system.roles.
func MarshalRole(r *Role) bson.Raw {
	doc := bson.D{
		{Key: "_id", Value: r.DB + "." + r.Name},
		{Key: "role", Value: r.Name},
		{Key: "db", Value: r.DB},
		{Key: "privileges", Value: PrivilegesArray(r.Privileges)},
		{Key: "roles", Value: RoleNamesArray(r.Roles)},
	}
	if r.AuthenticationRestrictions != nil {
		doc = append(doc, bson.E{Key: "authenticationRestrictions", Value: ArrayValue(r.AuthenticationRestrictions)})
	}
	return mustMarshal(doc)
}

// ParseRole reads a document of admin.system.roles.
func ParseRole(doc bson.Raw) (*Role, error) {
	r := &Role{}
	var err error
	if r.ID, err = stringField(doc, "_id"); err != nil {
		return nil, err
	}
	if r.Name, err = stringField(doc, "role"); err != nil {
		return nil, err
	}
	if r.DB, err = stringField(doc, "db"); err != nil {
		return nil, err
	}
	if v, err := doc.LookupErr("roles"); err == nil {
		if r.Roles, err = storedRoleNames(v); err != nil {
			return nil, fmt.Errorf("auth: role %s: %w", r.ID, err)
		}
	}
	if v, err := doc.LookupErr("privileges"); err == nil {
		if r.Privileges, err = ParsePrivileges(v); err != nil {
			return nil, fmt.Errorf("auth: role %s: %w", r.ID, err)
		}
	}
	if v, err := doc.LookupErr("authenticationRestrictions"); err == nil {
		if a, ok := v.ArrayOK(); ok {
			r.AuthenticationRestrictions = bson.Raw(slices.Clone(a))
		}
	}
	return r, nil
}

// ParseRoleNames reads a roles argument as commands take it: an array
// whose elements are either a role name, meaning that role on db (the
// command's database), or {role, db}.
func ParseRoleNames(v bson.RawValue, db string) ([]RoleName, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "roles must be an array, not %s", v.Type)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid roles array: %v", err)
	}
	names := make([]RoleName, 0, len(vals))
	for _, el := range vals {
		var n RoleName
		switch el.Type {
		case bson.TypeString:
			n = RoleName{Role: el.StringValue(), DB: db}
		case bson.TypeEmbeddedDocument:
			if n, err = roleNameDoc(el.Document()); err != nil {
				return nil, err
			}
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "Role names must be either strings or objects")
		}
		names = append(names, n)
	}
	return names, nil
}

// roleNameDoc reads {role, db}.
func roleNameDoc(d bson.Raw) (RoleName, error) {
	var n RoleName
	for _, f := range []struct {
		name string
		dst  *string
	}{{"role", &n.Role}, {"db", &n.DB}} {
		v, err := d.LookupErr(f.name)
		if err != nil {
			return n, mongoerr.New(mongoerr.NoSuchKey, "Missing expected field \"%s\"", f.name)
		}
		s, ok := v.StringValueOK()
		if !ok {
			return n, mongoerr.New(mongoerr.TypeMismatch, "\"%s\" had the wrong type. Expected string, found %s", f.name, bsonvalue.TypeName(bsoncore.Type(v.Type)))
		}
		*f.dst = s
	}
	return n, nil
}

// storedRoleNames reads the roles array of a stored document, whose
// elements are all {role, db}.
func storedRoleNames(v bson.RawValue) ([]RoleName, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, fmt.Errorf("roles is %s, not an array", v.Type)
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	names := make([]RoleName, 0, len(vals))
	for _, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("a role is %s, not an object", el.Type)
		}
		n, err := roleNameDoc(d)
		if err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}

// ParsePrivileges reads an array of privilege documents,
// {resource: {...}, actions: [...]}, refusing actions MongoDB does not
// know.
func ParsePrivileges(v bson.RawValue) ([]Privilege, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "privileges must be an array, not %s", bsonvalue.TypeName(bsoncore.Type(v.Type)))
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid privileges array: %v", err)
	}
	privs := make([]Privilege, 0, len(vals))
	for _, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Elements in privilege arrays must be objects")
		}
		p, err := ParsePrivilege(d)
		if err != nil {
			return nil, err
		}
		privs = append(privs, p)
	}
	return privs, nil
}

// ParsePrivilege reads one privilege document.
func ParsePrivilege(d bson.Raw) (Privilege, error) {
	var p Privilege
	rv, err := d.LookupErr("resource")
	if err != nil {
		return p, mongoerr.New(mongoerr.FailedToParse, "Privilege document must contain a \"resource\" field")
	}
	res, ok := rv.DocumentOK()
	if !ok {
		return p, mongoerr.New(mongoerr.FailedToParse, "Privilege \"resource\" must be an object")
	}
	if p.Resource, err = parseResource(res); err != nil {
		return p, err
	}
	av, err := d.LookupErr("actions")
	if err != nil {
		return p, mongoerr.New(mongoerr.FailedToParse, "Privilege document must contain an \"actions\" field")
	}
	acts, ok := av.ArrayOK()
	if !ok {
		return p, mongoerr.New(mongoerr.FailedToParse, "Privilege \"actions\" must be an array")
	}
	vals, _ := acts.Values()
	if len(vals) == 0 {
		return p, mongoerr.New(mongoerr.FailedToParse, "Privilege document must have at least one action")
	}
	var unknown []string
	for _, a := range vals {
		s, ok := a.StringValueOK()
		if !ok {
			return p, mongoerr.New(mongoerr.FailedToParse, "Privilege actions must be strings")
		}
		if !IsAction(s) {
			unknown = append(unknown, s)
		}
		p.Actions = append(p.Actions, Action(s))
	}
	if len(unknown) > 0 {
		return p, mongoerr.New(mongoerr.FailedToParse, "Unrecognized action privilege strings: %s", strings.Join(unknown, ","))
	}
	elems, _ := d.Elements()
	for _, e := range elems {
		if k := e.Key(); k != "resource" && k != "actions" {
			return p, mongoerr.New(mongoerr.FailedToParse, "Unrecognized field \"%s\" in privilege document", k)
		}
	}
	return p, nil
}

// parseResource reads {cluster: true}, {anyResource: true} or
// {db, collection}.
func parseResource(d bson.Raw) (Resource, error) {
	var r Resource
	elems, _ := d.Elements()
	switch {
	case len(elems) == 1 && elems[0].Key() == "cluster":
		if b, ok := elems[0].Value().BooleanOK(); !ok || !b {
			return r, mongoerr.New(mongoerr.FailedToParse, "resource \"cluster\" must be true")
		}
		r.Cluster = true
	case len(elems) == 1 && elems[0].Key() == "anyResource":
		if b, ok := elems[0].Value().BooleanOK(); !ok || !b {
			return r, mongoerr.New(mongoerr.FailedToParse, "resource \"anyResource\" must be true")
		}
		r.AnyResource = true
	default:
		db, okDB := d.Lookup("db").StringValueOK()
		coll, okColl := d.Lookup("collection").StringValueOK()
		if !okDB || !okColl || len(elems) != 2 {
			return r, mongoerr.New(mongoerr.FailedToParse,
				"resource must be {cluster: true}, {anyResource: true} or {db: <string>, collection: <string>}")
		}
		r.DB, r.Collection = db, coll
	}
	return r, nil
}

// ResourceDoc returns r as MongoDB writes a resource.
func ResourceDoc(r Resource) bson.D {
	switch {
	case r.Cluster:
		return bson.D{{Key: "cluster", Value: true}}
	case r.AnyResource:
		return bson.D{{Key: "anyResource", Value: true}}
	}
	return bson.D{{Key: "db", Value: r.DB}, {Key: "collection", Value: r.Collection}}
}

// PrivilegesArray returns privileges as an array of privilege documents.
func PrivilegesArray(privs []Privilege) bson.A {
	arr := make(bson.A, 0, len(privs))
	for _, p := range privs {
		acts := make(bson.A, 0, len(p.Actions))
		for _, a := range p.Actions {
			acts = append(acts, string(a))
		}
		arr = append(arr, bson.D{{Key: "resource", Value: ResourceDoc(p.Resource)}, {Key: "actions", Value: acts}})
	}
	return arr
}

// RoleNamesArray returns names as an array of {role, db}.
func RoleNamesArray(names []RoleName) bson.A {
	arr := make(bson.A, 0, len(names))
	for _, n := range names {
		arr = append(arr, bson.D{{Key: "role", Value: n.Role}, {Key: "db", Value: n.DB}})
	}
	return arr
}

// ArrayValue wraps the bytes of a BSON array as a value to marshal: the
// bson package would take bare bytes for binary data.
func ArrayValue(arr bson.Raw) bson.RawValue {
	return bson.RawValue{Type: bson.TypeArray, Value: arr}
}

func stringField(doc bson.Raw, name string) (string, error) {
	s, ok := doc.Lookup(name).StringValueOK()
	if !ok {
		return "", fmt.Errorf("auth: stored document has no string %q", name)
	}
	return s, nil
}

// mustMarshal marshals a document built of plain values, which cannot
// fail.
func mustMarshal(doc bson.D) bson.Raw {
	raw, err := bson.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("auth: marshal %v: %v", doc, err))
	}
	return raw
}
