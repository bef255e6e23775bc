package usermgmt

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// What mongodump and mongorestore need of the server to carry users and
// roles (--dumpDbUsersAndRoles, --restoreDbUsersAndRoles, and a full dump
// of the admin database): the auth schema version they check, and
// _mergeAuthzCollections, through which mongorestore loads users and roles
// instead of writing admin.system.users itself. mongorestore inserts the
// dumped documents into temporary collections of admin and asks the server
// to merge them.

// SchemaVersion is MongoDB's schemaVersion28SCRAM, the version of
// every deployment since 3.0: mongodump and mongorestore refuse to carry
// users of any other.
const SchemaVersion = 5

const versionColl = "system.version"

// writeAuthSchemaVersion records the schema version in admin.system.version
// as {_id: "authSchema", currentVersion: 5}, as MongoDB does before every
// write to users and roles; mongodump --dumpDbUsersAndRoles reads it.
func (s *Service) writeAuthSchemaVersion(ctx context.Context) error {
	filter, err := bson.Marshal(bson.D{{Key: "_id", Value: "authSchema"}})
	if err != nil {
		return err
	}
	set, err := bson.Marshal(bson.D{{Key: "$set", Value: bson.D{{Key: "currentVersion", Value: int32(SchemaVersion)}}}})
	if err != nil {
		return err
	}
	up, err := engine.CompileUpdateDoc(set)
	if err != nil {
		return err
	}
	_, err = s.eng.Update(ctx, DB, versionColl, engine.UpdateSpec{Filter: filter, Update: up, Upsert: true})
	return err
}

// UpgradeSchema records the schema version in a store whose users
// were created before Lethe wrote it, so that mongodump can carry them
// without waiting for the next change to a user or role.
func (s *Service) UpgradeSchema() error {
	ctx := context.Background()
	has, err := s.HasUsers(ctx)
	if err != nil || !has {
		return err
	}
	if doc, err := s.eng.FindByID(ctx, DB, versionColl, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "authSchema")}); err != nil || doc != nil {
		return err
	}
	if err := s.writeAuthSchemaVersion(ctx); err != nil {
		return fmt.Errorf("server: record the auth schema version: %w", err)
	}
	return nil
}

// mergeAuthzArgs are _mergeAuthzCollections' arguments: the namespaces of
// the temporary collections ("" for none), the database whose users and
// roles are merged ("" for all), and whether those absent from the
// temporary collections are dropped.
type mergeAuthzArgs struct {
	usersNS, rolesNS string
	db               string
	drop             bool
}

func parseMergeAuthz(req *command.Request) (mergeAuthzArgs, error) {
	const cmd = "_mergeAuthzCollections"
	var a mergeAuthzArgs
	for key, v := range command.Args(req.Body) {
		var err error
		switch string(key) {
		case "tempUsersCollection":
			a.usersNS, err = command.String(cmd, "tempUsersCollection", v)
		case "tempRolesCollection":
			a.rolesNS, err = command.String(cmd, "tempRolesCollection", v)
		case "db":
			a.db, err = command.String(cmd, "db", v)
		case "drop":
			a.drop, err = command.Bool(cmd, "drop", v)
		default:
			err = command.UnknownField(cmd, key)
		}
		if err != nil {
			return a, err
		}
	}
	if a.usersNS == "" && a.rolesNS == "" {
		return a, mongoerr.New(mongoerr.BadValue, "Must provide at least one of \"tempUsersCollection\" and \"tempRolescollection\"")
	}
	return a, nil
}

// mergeAuthzCollections moves the users and roles of the temporary
// collections into admin.system.users and admin.system.roles, as MongoDB's
// _mergeAuthzCollections: without drop, each is added and one that
// already exists is kept (and logged); with drop, existing ones are
// replaced and those of the database (of every database for db "") that
// the temporary collections lack are dropped, after the others are in, so
// that no moment is left without users. A document that is not a valid
// user or role is skipped and logged, as MongoDB carries on past one that
// fails.
func (s *Service) mergeAuthzCollections(ctx context.Context, req *command.Request) (bson.Raw, error) {
	a, err := parseMergeAuthz(req)
	if err != nil {
		return nil, err
	}
	if err := s.writeAuthSchemaVersion(ctx); err != nil {
		return nil, err
	}
	defer s.usersChanged()
	if a.usersNS != "" {
		if err := s.mergeAuthzDocs(ctx, UsersCollection, a.usersNS, a.db, a.drop); err != nil {
			return nil, err
		}
	}
	if a.rolesNS != "" {
		if err := s.mergeAuthzDocs(ctx, RolesCollection, a.rolesNS, a.db, a.drop); err != nil {
			return nil, err
		}
	}
	return command.OK()
}

// mergeAuthzDocs merges the documents of the temporary collection tempNS
// into admin.<coll>.
func (s *Service) mergeAuthzDocs(ctx context.Context, coll, tempNS, db string, drop bool) error {
	tempDB, tempColl, ok := strings.Cut(tempNS, ".")
	if !ok || engine.ValidateNamespace(tempDB, tempColl) != nil {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace: %s", tempNS)
	}
	dbFilter := bson.D{}
	if db != "" {
		dbFilter = bson.D{{Key: "db", Value: db}}
	}
	if err := s.ensureAuthCollection(ctx, coll); err != nil {
		return err
	}
	// The entries to drop: those there now, less those merged.
	toDrop := map[string]bool{}
	if drop {
		existing, err := s.authDocs(ctx, coll, dbFilter, nil)
		if err != nil {
			return err
		}
		for _, d := range existing {
			if id, ok := d.Lookup("_id").StringValueOK(); ok {
				toDrop[id] = true
			}
		}
	}
	var temp []bson.Raw
	if s.eng.CollectionExists(ctx, tempDB, tempColl) {
		f, err := bson.Marshal(dbFilter)
		if err != nil {
			return err
		}
		cur, err := s.eng.Find(ctx, tempDB, tempColl, engine.FindSpec{Filter: f})
		if err != nil {
			return err
		}
		if temp, err = cur.All(ctx); err != nil {
			return err
		}
	}
	for _, d := range temp {
		id, doc, err := normalizeAuthDoc(coll, d)
		if err != nil {
			s.log.Warn("_mergeAuthzCollections: skipped an invalid entry", zap.String("collection", tempNS), zap.Error(err))
			continue
		}
		if drop && toDrop[id] {
			if _, err := s.replaceAuthDoc(ctx, coll, doc); err != nil {
				return err
			}
		} else {
			res, err := s.eng.Insert(ctx, DB, coll, []bson.Raw{doc}, true)
			if err == nil && len(res.Errors) > 0 {
				err = res.Errors[0].Err
			}
			if mongoerr.CodeOf(err) == mongoerr.DuplicateKey {
				s.log.Warn("_mergeAuthzCollections: kept the existing entry", zap.String("collection", coll), zap.String("id", id))
			} else if err != nil {
				return err
			}
		}
		delete(toDrop, id)
	}
	for id := range toDrop {
		if _, err := s.deleteAuthDocs(ctx, coll, bson.D{{Key: "_id", Value: id}}); err != nil {
			return err
		}
	}
	return nil
}

// normalizeAuthDoc checks that d is a user (coll system.users) or a role
// and returns its _id and the document as the user management commands
// write it.
func normalizeAuthDoc(coll string, d bson.Raw) (string, bson.Raw, error) {
	if coll == UsersCollection {
		u, err := auth.ParseUser(d)
		if err != nil {
			return "", nil, err
		}
		if u.ID != u.DB+"."+u.Name {
			return "", nil, mongoerr.New(mongoerr.BadValue, "user _id %q is not %s.%s", u.ID, u.DB, u.Name)
		}
		if len(u.UserID.Data) == 0 {
			u.UserID = newUserID()
		}
		return u.ID, auth.MarshalUser(u), nil
	}
	r, err := auth.ParseRole(d)
	if err != nil {
		return "", nil, err
	}
	if r.ID != r.DB+"."+r.Name {
		return "", nil, mongoerr.New(mongoerr.BadValue, "role _id %q is not %s.%s", r.ID, r.DB, r.Name)
	}
	return r.ID, auth.MarshalRole(r), nil
}
