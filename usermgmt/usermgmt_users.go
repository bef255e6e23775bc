package usermgmt

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// userArgs are the fields createUser and updateUser share.
type userArgs struct {
	name       string
	pwd        *string
	customData bson.Raw
	roles      []auth.RoleName
	hasRoles   bool
	// restrictions is nil for an empty array, which createUser stores as
	// none and updateUser takes as removing them.
	restrictions    bson.Raw
	hasRestrictions bool
	mechanisms      []auth.Mechanism
	hasMechanisms   bool
	digestPassword  bool
}

func parseUserArgs(cmd string, req *command.Request) (userArgs, error) {
	a := userArgs{digestPassword: true}
	var err error
	if a.name, err = command.String(cmd, cmd, command.FirstValue(req.Body)); err != nil {
		return a, err
	}
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "pwd":
			var p string
			p, err = command.String(cmd, "pwd", v)
			a.pwd = &p
		case "customData":
			a.customData, err = command.Doc(cmd, "customData", v)
			a.customData = slices.Clone(a.customData)
		case "roles":
			a.roles, err = roleArg(cmd, "roles", v, req.DB)
			a.hasRoles = true
		case "authenticationRestrictions":
			a.restrictions, err = restrictionsArg(cmd, v)
			a.hasRestrictions = true
		case "mechanisms":
			a.mechanisms, err = mechanismsArg(cmd, v)
			a.hasMechanisms = true
		case "digestPassword":
			a.digestPassword, err = command.Bool(cmd, "digestPassword", v)
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return a, err
		}
	}
	if a.hasMechanisms && len(a.mechanisms) == 0 {
		return a, mongoerr.New(mongoerr.BadValue, "mechanisms field must not be empty")
	}
	return a, nil
}

// mechanismsArg parses the mechanisms of createUser and updateUser.
func mechanismsArg(cmd string, v bson.RawValue) ([]auth.Mechanism, error) {
	arr, err := command.Array(cmd, "mechanisms", v)
	if err != nil {
		return nil, err
	}
	vals, _ := arr.Values()
	var mechs []auth.Mechanism
	for _, el := range vals {
		s, ok := el.StringValueOK()
		if !ok {
			return nil, command.WrongType(cmd, "mechanisms", el.Type, "string")
		}
		m := auth.Mechanism(s)
		if m != auth.ScramSHA1 && m != auth.ScramSHA256 {
			return nil, mongoerr.New(mongoerr.BadValue, "Unknown auth mechanism '%s'", s)
		}
		if !slices.Contains(mechs, m) {
			mechs = append(mechs, m)
		}
	}
	return mechs, nil
}

// credentials derives the SCRAM credentials of a password for mechs (both
// SCRAM mechanisms when none is named). Without digest the client has
// digested the password itself, which only SCRAM-SHA-1 runs over.
func (s *Service) credentials(name, pwd string, mechs []auth.Mechanism, digest bool) (map[auth.Mechanism]auth.ScramCredential, error) {
	if pwd == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "Password cannot be empty")
	}
	if len(mechs) == 0 {
		mechs = []auth.Mechanism{auth.ScramSHA1, auth.ScramSHA256}
	}
	if !digest && slices.Contains(mechs, auth.ScramSHA256) {
		return nil, mongoerr.New(mongoerr.BadValue, "Use of SCRAM-SHA-256 requires undigested passwords")
	}
	creds := map[auth.Mechanism]auth.ScramCredential{}
	for _, m := range mechs {
		var c auth.ScramCredential
		var err error
		switch {
		case m == auth.ScramSHA1 && !digest:
			c, err = auth.NewScramSHA1CredentialFromDigest(name, pwd, s.cfg.ScramSHA1Iterations)
		case m == auth.ScramSHA1:
			c, err = auth.NewScramCredential(m, name, pwd, s.cfg.ScramSHA1Iterations)
		default:
			c, err = auth.NewScramCredential(m, name, pwd, s.cfg.ScramSHA256Iterations)
		}
		if err != nil {
			// SASLprep refused the name or password. Its error quotes the
			// password, which must not reach the client or a log.
			return nil, mongoerr.New(mongoerr.BadValue, "Cannot prepare the user name or password for %s: SASLprep refused it", m)
		}
		creds[m] = c
	}
	return creds, nil
}

func (s *Service) createUser(ctx context.Context, req *command.Request) (bson.Raw, error) {
	a, err := parseUserArgs("createUser", req)
	if err != nil {
		return nil, err
	}
	switch {
	case !a.hasRoles:
		return nil, command.MissingField("createUser", "roles")
	case req.DB == "local":
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot create users in the local database")
	case strings.ContainsRune(a.name, 0):
		return nil, mongoerr.New(mongoerr.BadValue, "Username cannot contain NULL characters")
	case a.pwd == nil && req.DB != auth.ExternalDB:
		return nil, mongoerr.New(mongoerr.BadValue, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	case a.pwd != nil && req.DB == auth.ExternalDB:
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot set the password for users defined on the '$external' database")
	case a.name == "":
		return nil, mongoerr.New(mongoerr.BadValue, "User document needs 'user' field to be non-empty")
	}
	u := &auth.User{Name: a.name, DB: req.DB, Roles: a.roles, CustomData: a.customData, AuthenticationRestrictions: a.restrictions}
	if a.pwd != nil {
		if u.Credentials, err = s.credentials(a.name, *a.pwd, a.mechanisms, a.digestPassword); err != nil {
			return nil, err
		}
	}
	if existing, err := s.Store().User(ctx, u.DB, u.Name); err != nil {
		return nil, err
	} else if existing != nil {
		return nil, mongoerr.New(codeUserExists, "User \"%s@%s\" already exists", u.Name, u.DB)
	}
	if err := s.checkRolesExist(ctx, u.Roles); err != nil {
		return nil, err
	}
	u.UserID = newUserID()
	// The unique index catches another createUser of the same name that
	// won the race.
	err = s.insertAuthDoc(ctx, UsersCollection, auth.MarshalUser(u), mongoerr.New(codeUserExists, "User \"%s@%s\" already exists", u.Name, u.DB))
	if err != nil {
		return nil, err
	}
	return command.OK()
}

// storedUser returns db's user name, UserNotFound if there is none.
func (s *Service) storedUser(ctx context.Context, db, name string) (*auth.User, error) {
	u, err := s.Store().User(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, mongoerr.New(mongoerr.UserNotFound, "User %s@%s not found", name, db)
	}
	return u, nil
}

// saveUser replaces u's document.
func (s *Service) saveUser(ctx context.Context, u *auth.User) error {
	found, err := s.replaceAuthDoc(ctx, UsersCollection, auth.MarshalUser(u))
	if err == nil && !found {
		err = mongoerr.New(mongoerr.UserNotFound, "User %s@%s not found", u.Name, u.DB)
	}
	return err
}

func (s *Service) updateUser(ctx context.Context, req *command.Request) (bson.Raw, error) {
	a, err := parseUserArgs("updateUser", req)
	if err != nil {
		return nil, err
	}
	if a.pwd == nil && a.customData == nil && !a.hasRoles && !a.hasRestrictions && !a.hasMechanisms {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one field to update in updateUser")
	}
	if a.pwd != nil && req.DB == auth.ExternalDB {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot set the password for users defined on the '$external' database")
	}
	u, err := s.storedUser(ctx, req.DB, a.name)
	if err != nil {
		return nil, err
	}
	switch {
	case a.pwd != nil:
		if u.Credentials, err = s.credentials(a.name, *a.pwd, a.mechanisms, a.digestPassword); err != nil {
			return nil, err
		}
	case a.hasMechanisms:
		// Without a new password the mechanisms can only narrow: the
		// credentials of others cannot be derived.
		for _, m := range a.mechanisms {
			if _, ok := u.Credentials[m]; !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "mechanisms field must be a subset of previously set mechanisms")
			}
		}
		for m := range u.Credentials {
			if !slices.Contains(a.mechanisms, m) {
				delete(u.Credentials, m)
			}
		}
	}
	if a.customData != nil {
		u.CustomData = a.customData
	}
	if a.hasRestrictions {
		u.AuthenticationRestrictions = a.restrictions
	}
	if a.hasRoles {
		if err := s.checkRolesExist(ctx, a.roles); err != nil {
			return nil, err
		}
		u.Roles = a.roles
	}
	if err := s.saveUser(ctx, u); err != nil {
		return nil, err
	}
	return command.OK()
}

func (s *Service) dropUser(ctx context.Context, req *command.Request) (bson.Raw, error) {
	name, err := command.String("dropUser", "dropUser", command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	for key := range command.Args(req.Body) {
		return nil, command.UnknownField("dropUser", key)
	}
	n, err := s.deleteAuthDocs(ctx, UsersCollection, bson.D{{Key: "_id", Value: req.DB + "." + name}})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, mongoerr.New(mongoerr.UserNotFound, "User '%s@%s' not found", name, req.DB)
	}
	return command.OK()
}

func (s *Service) dropAllUsersFromDatabase(ctx context.Context, req *command.Request) (bson.Raw, error) {
	for key := range command.Args(req.Body) {
		return nil, command.UnknownField("dropAllUsersFromDatabase", key)
	}
	n, err := s.deleteAuthDocs(ctx, UsersCollection, bson.D{{Key: "db", Value: req.DB}})
	if err != nil {
		return nil, err
	}
	return command.OK(bson.E{Key: "n", Value: int32(n)})
}

func (s *Service) grantRolesToUser(ctx context.Context, req *command.Request) (bson.Raw, error) {
	return s.changeUserRoles(ctx, req, "grantRolesToUser", addRoleNames)
}

func (s *Service) revokeRolesFromUser(ctx context.Context, req *command.Request) (bson.Raw, error) {
	return s.changeUserRoles(ctx, req, "revokeRolesFromUser", removeRoleNames)
}

// changeUserRoles runs grantRolesToUser or revokeRolesFromUser, whose
// change is apply.
func (s *Service) changeUserRoles(ctx context.Context, req *command.Request, cmd string, apply func(have, change []auth.RoleName) []auth.RoleName) (bson.Raw, error) {
	name, roles, err := namedRolesArgs(cmd, req)
	if err != nil {
		return nil, err
	}
	u, err := s.Store().User(ctx, req.DB, name)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, mongoerr.New(mongoerr.UserNotFound, "Could not find user \"%s\" for db \"%s\"", name, req.DB)
	}
	if err := s.checkRolesExist(ctx, roles); err != nil {
		return nil, err
	}
	u.Roles = apply(u.Roles, roles)
	if err := s.saveUser(ctx, u); err != nil {
		return nil, err
	}
	return command.OK()
}

// namedRolesArgs parses {<cmd>: name, roles: [...]}, the roles non-empty.
func namedRolesArgs(cmd string, req *command.Request) (string, []auth.RoleName, error) {
	name, err := command.String(cmd, cmd, command.FirstValue(req.Body))
	if err != nil {
		return "", nil, err
	}
	var roles []auth.RoleName
	for key, v := range command.Args(req.Body) {
		switch string(key) {
		case "roles":
			roles, err = roleArg(cmd, "roles", v, req.DB)
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if len(roles) == 0 {
		return "", nil, mongoerr.New(mongoerr.BadValue, "%s command requires a non-empty \"roles\" array", cmd)
	}
	return name, roles, nil
}

// newUserID returns a random (version 4) UUID, the userId MongoDB gives
// each user so that a user dropped and created again is a new one.
func newUserID() bson.Binary {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u[:]}
}
