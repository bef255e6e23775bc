package server

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/usermgmt"
)

// Collections named system.* belong to the server. Clients may create and
// write only those MongoDB lets them (isLegalClientSystemNS in its source);
// any other is InvalidNamespace, so that no client can plant a collection
// that a later version of Lethe, or a tool, takes for one of its own.

// guardSystemNamespaces makes the commands that create collections or write
// to them check system.* names first.
func (s *Server) guardSystemNamespaces() {
	for name, check := range map[string]func(db, coll string) error{
		"insert":        checkWriteNS,
		"update":        checkWriteNS,
		"delete":        checkWriteNS,
		"findAndModify": checkWriteNS,
		"create":        checkCreateNS,
		"createIndexes": checkCreateNS,
	} {
		cmd := s.commands[name]
		if cmd == nil {
			continue
		}
		handle := cmd.handle
		cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
			coll, ok := command.FirstValue(req.Body).StringValueOK()
			// Names invalid for other reasons get the handler's own error.
			if ok && engine.ValidateNamespace(req.DB, coll) == nil {
				if err := check(req.DB, coll); err != nil {
					return nil, err
				}
			}
			return handle(ctx, req)
		}
	}
	if cmd := s.commands["renameCollection"]; cmd != nil {
		handle := cmd.handle
		cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
			// Renaming into or out of the users and roles would write them
			// as directly as an insert or a delete.
			from, _ := command.FirstValue(req.Body).StringValueOK()
			to, _ := req.Body.Lookup("to").StringValueOK()
			for _, ns := range []string{from, to} {
				if ns == usermgmt.DB+"."+usermgmt.UsersCollection || ns == usermgmt.DB+"."+usermgmt.RolesCollection {
					return nil, mongoerr.New(mongoerr.Unauthorized, "not authorized to rename %s: use the user management commands", ns)
				}
			}
			return handle(ctx, req)
		}
	}
	s.guardReplicatedLocal()
}

// checkWriteNS is MongoDB's userAllowedWriteNS: the profiler's and the
// views' collections are the server's to write. Users and roles change
// only through the user management commands, which derive credentials
// and check role references: a client writing them directly is refused
// as mongod refuses one without privileges on them.
func checkWriteNS(db, coll string) error {
	if coll == "system.profile" || coll == "system.views" {
		return mongoerr.New(mongoerr.InvalidNamespace, "cannot write to %s.%s", db, coll)
	}
	if db == usermgmt.DB && (coll == usermgmt.UsersCollection || coll == usermgmt.RolesCollection) {
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to write %s directly: use the user management commands", db, coll)
	}
	return checkCreateNS(db, coll)
}

// checkCreateNS is MongoDB's userAllowedCreateNS for system names.
func checkCreateNS(db, coll string) error {
	if coll == "system.profile" {
		return nil
	}
	if strings.HasPrefix(coll, "system.") && !legalClientSystemNS(db, coll) {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid system namespace: %s.%s", db, coll)
	}
	if strings.Contains(coll, ".system.") && !(db == "config" && (strings.HasPrefix(coll, "cache.chunks.") || legalClientSystemNS(db, coll))) {
		return mongoerr.New(mongoerr.BadValue, "Invalid namespace: %s.%s", db, coll)
	}
	return nil
}

// legalClientSystemNS lists the system collections MongoDB 7.0 lets
// clients create and write.
func legalClientSystemNS(db, coll string) bool {
	switch db {
	case "admin":
		switch coll {
		case "system.roles", "system.version", "system.keys", "system.backup_users":
			return true
		}
	case "config":
		switch coll {
		case "system.sessions", "system.indexBuilds", "system.sharding_ddl_coordinators",
			"system.configsvr_coordinators", "system.preimages", "system.change_collection":
			return true
		}
		if strings.Contains(coll, ".system.resharding.") {
			return true
		}
	case "local":
		switch coll {
		case "system.replset", "system.healthlog", "system.collections_to_restore":
			return true
		}
	}
	switch coll {
	case "system.users", "system.js", "system.views":
		return true
	}
	if strings.HasPrefix(coll, "system.resharding.") {
		return true
	}
	if view, ok := strings.CutPrefix(coll, "system.buckets."); ok {
		return engine.ValidateNamespace(db, view) == nil && !strings.HasPrefix(view, "system.")
	}
	return false
}
