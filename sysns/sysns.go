package sysns

import (
	"slices"
	"strings"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// Guard checks a command's namespaces before its handler runs; an error
// is the command's reply.
type Guard func(req *command.Request) error

// Guards are the checks of the commands that create collections, write to
// them or rename them, by command name. userManaged are the namespaces
// ("db.coll") that only the user management commands write: the users and
// the roles.
func Guards(userManaged []string) map[string]Guard {
	guards := make(map[string]Guard)
	for name, check := range map[string]func(db, coll string, userManaged []string) error{
		"insert":        checkWriteNS,
		"update":        checkWriteNS,
		"delete":        checkWriteNS,
		"findAndModify": checkWriteNS,
		"create":        checkCreateNS,
		"createIndexes": checkCreateNS,
	} {
		guards[name] = func(req *command.Request) error {
			coll, ok := command.FirstValue(req.Body).StringValueOK()
			// Names invalid for other reasons get the handler's own error.
			if ok && engine.ValidateNamespace(req.DB, coll) == nil {
				return check(req.DB, coll, userManaged)
			}
			return nil
		}
	}
	guards["renameCollection"] = func(req *command.Request) error {
		// Renaming into or out of the users and roles would write them
		// as directly as an insert or a delete.
		from, _ := command.FirstValue(req.Body).StringValueOK()
		to, _ := req.Body.Lookup("to").StringValueOK()
		for _, ns := range []string{from, to} {
			if slices.Contains(userManaged, ns) {
				return mongoerr.New(mongoerr.Unauthorized, "not authorized to rename %s: use the user management commands", ns)
			}
		}
		return nil
	}
	return guards
}

// checkWriteNS is MongoDB's userAllowedWriteNS: the profiler's and the
// views' collections are the server's to write. Users and roles change
// only through the user management commands, which derive credentials
// and check role references: a client writing them directly is refused
// as mongod refuses one without privileges on them.
func checkWriteNS(db, coll string, userManaged []string) error {
	if coll == "system.profile" || coll == "system.views" {
		return mongoerr.New(mongoerr.InvalidNamespace, "cannot write to %s.%s", db, coll)
	}
	if slices.Contains(userManaged, db+"."+coll) {
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to write %s directly: use the user management commands", db, coll)
	}
	return checkCreateNS(db, coll, nil)
}

// checkCreateNS is MongoDB's userAllowedCreateNS for system names. It
// takes userManaged to be a check of Guards, and ignores it.
func checkCreateNS(db, coll string, _ []string) error {
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
