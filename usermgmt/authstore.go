package usermgmt

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// Users and user-defined roles are documents of two collections of the
// admin database, as in MongoDB: written through the engine like any
// collection, so that they survive restarts, appear in the oplog and are
// read by mongodump; clients change them only through the user management
// commands (the server refuses other writes to them: server/sysns.go).
// DB is the database that holds them.
const (
	DB              = "admin"
	UsersCollection = "system.users"
	RolesCollection = "system.roles"
)

// HasUsers reports whether any user exists, for the localhost
// exception.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	if !s.eng.CollectionExists(ctx, DB, UsersCollection) {
		return false, nil
	}
	cur, err := s.eng.Find(ctx, DB, UsersCollection, engine.FindSpec{Limit: 1})
	if err != nil {
		return false, err
	}
	docs, err := cur.All(ctx)
	return len(docs) > 0, err
}

// HasRoles reports whether any user-defined role exists, which
// ends the localhost exception as a user does.
func (s *Service) HasRoles(ctx context.Context) (bool, error) {
	if !s.eng.CollectionExists(ctx, DB, RolesCollection) {
		return false, nil
	}
	cur, err := s.eng.Find(ctx, DB, RolesCollection, engine.FindSpec{Limit: 1})
	if err != nil {
		return false, err
	}
	docs, err := cur.All(ctx)
	return len(docs) > 0, err
}

// Store reads users and roles for authentication (auth.Store) from
// admin.system.users and admin.system.roles.
func (s *Service) Store() auth.Store { return engineAuthStore{s.eng} }

type engineAuthStore struct{ eng *engine.Engine }

// User returns db's user name, nil if there is none.
func (st engineAuthStore) User(ctx context.Context, db, name string) (*auth.User, error) {
	doc, err := st.eng.FindByID(ctx, DB, UsersCollection, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, db+"."+name)})
	if err != nil || doc == nil {
		return nil, err
	}
	return auth.ParseUser(doc)
}

// Role returns db's user-defined role name, nil if there is none.
func (st engineAuthStore) Role(ctx context.Context, db, name string) (*auth.Role, error) {
	doc, err := st.eng.FindByID(ctx, DB, RolesCollection, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, db+"."+name)})
	if err != nil || doc == nil {
		return nil, err
	}
	return auth.ParseRole(doc)
}

// ensureAuthCollection makes sure admin.<coll> exists with MongoDB's
// unique index on the name and database of its entries ({user: 1, db: 1}
// or {role: 1, db: 1}), also when a client created the collection first,
// and that the auth schema version is recorded, as before any write to
// users or roles in MongoDB (mergeauthz.go).
func (s *Service) ensureAuthCollection(ctx context.Context, coll string) error {
	if err := s.writeAuthSchemaVersion(ctx); err != nil {
		return fmt.Errorf("server: record the auth schema version: %w", err)
	}
	field := "user"
	if coll == RolesCollection {
		field = "role"
	}
	spec, err := bson.Marshal(bson.D{
		{Key: "key", Value: bson.D{{Key: field, Value: 1}, {Key: "db", Value: 1}}},
		{Key: "name", Value: field + "_1_db_1"},
		{Key: "unique", Value: true},
	})
	if err != nil {
		return fmt.Errorf("server: index of %s: %w", coll, err)
	}
	// CreateIndexes creates the collection too; an index that already
	// exists is no error.
	if _, err := s.eng.CreateIndexes(ctx, DB, coll, []bson.Raw{spec}); err != nil {
		return fmt.Errorf("server: create %s.%s: %w", DB, coll, err)
	}
	return nil
}

// authDocs returns the documents of admin.<coll> matching filter in sort
// order.
func (s *Service) authDocs(ctx context.Context, coll string, filter, sort bson.D) ([]bson.Raw, error) {
	if !s.eng.CollectionExists(ctx, DB, coll) {
		return nil, nil
	}
	f, err := bson.Marshal(filter)
	if err != nil {
		return nil, err
	}
	spec := engine.FindSpec{Filter: f}
	if sort != nil {
		if spec.Sort, err = bson.Marshal(sort); err != nil {
			return nil, err
		}
	}
	cur, err := s.eng.Find(ctx, DB, coll, spec)
	if err != nil {
		return nil, err
	}
	return cur.All(ctx)
}

// insertAuthDoc adds doc to admin.<coll>, creating the collection and
// its unique index if need be; exists is the error when an entry of the
// same name and database is there already.
func (s *Service) insertAuthDoc(ctx context.Context, coll string, doc bson.Raw, exists error) error {
	if err := s.ensureAuthCollection(ctx, coll); err != nil {
		return err
	}
	defer s.usersChanged()
	res, err := s.eng.Insert(ctx, DB, coll, []bson.Raw{doc}, true)
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		if mongoerr.CodeOf(res.Errors[0].Err) == mongoerr.DuplicateKey {
			return exists
		}
		return res.Errors[0].Err
	}
	return nil
}

// replaceAuthDoc replaces the document of admin.<coll> whose _id is doc's,
// reporting whether there was one.
func (s *Service) replaceAuthDoc(ctx context.Context, coll string, doc bson.Raw) (bool, error) {
	defer s.usersChanged()
	up, err := engine.CompileUpdateDoc(doc)
	if err != nil {
		return false, err
	}
	filter, err := bson.Marshal(bson.D{{Key: "_id", Value: doc.Lookup("_id")}})
	if err != nil {
		return false, err
	}
	res, err := s.eng.Update(ctx, DB, coll, engine.UpdateSpec{Filter: filter, Update: up})
	return res.Matched > 0, err
}

// deleteAuthDocs deletes the documents of admin.<coll> matching filter.
func (s *Service) deleteAuthDocs(ctx context.Context, coll string, filter bson.D) (int64, error) {
	defer s.usersChanged()
	if !s.eng.CollectionExists(ctx, DB, coll) {
		return 0, nil
	}
	f, err := bson.Marshal(filter)
	if err != nil {
		return 0, err
	}
	return s.eng.Delete(ctx, DB, coll, f, 0, bson.RawValue{})
}

// updateAuthDocs applies an operator update to every document of
// admin.<coll> matching filter.
func (s *Service) updateAuthDocs(ctx context.Context, coll string, filter, upd bson.D) error {
	defer s.usersChanged()
	if !s.eng.CollectionExists(ctx, DB, coll) {
		return nil
	}
	f, err := bson.Marshal(filter)
	if err != nil {
		return err
	}
	u, err := bson.Marshal(upd)
	if err != nil {
		return err
	}
	up, err := engine.CompileUpdateDoc(u)
	if err != nil {
		return err
	}
	_, err = s.eng.Update(ctx, DB, coll, engine.UpdateSpec{Filter: f, Update: up, Multi: true})
	return err
}
