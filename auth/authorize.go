package auth

import (
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// UnauthorizedError says which privilege a command lacked. The server
// answers it with code 13 Unauthorized.
type UnauthorizedError struct {
	Command, DB string
	Resource    Resource
	Action      Action
}

func (e *UnauthorizedError) Error() string {
	return fmt.Sprintf("not authorized on %s to execute command %s: requires action %s on %s",
		e.DB, e.Command, e.Action, e.Resource)
}

// String renders a resource as MongoDB's privilege documents spell it.
func (r Resource) String() string {
	switch {
	case r.AnyResource:
		return "{anyResource: true}"
	case r.Cluster:
		return "{cluster: true}"
	}
	return fmt.Sprintf("{db: %q, collection: %q}", r.DB, r.Collection)
}

// Authorize checks that g may run command cmd on db: Required's privileges,
// or one of the other ways MongoDB lets the command through —
//
//   - listCollections with authorizedCollections and nameOnly, for a
//     client with any privilege in db (the server then lists only the
//     collections it may see);
//   - renameCollection within one database, with renameCollectionSameDB on
//     it (and dropCollection on the target for dropTarget), when the
//     client may read the source or may not read the target, so a rename
//     cannot reveal a collection it could not read;
//   - rolesInfo: roles the client holds need no viewRole.
//
// The result is nil, an *UnauthorizedError, or Required's error. The
// commands about the client's own user are OwnUserException's.
func Authorize(g *Grants, cmd, db string, body bson.Raw) error {
	required, err := Required(cmd, db, body)
	if err != nil {
		return err
	}
	return AuthorizeRequired(g, cmd, db, body, required)
}

// AuthorizeRequired is Authorize for a caller that has Required's answer
// already, as the server does to tell the commands needing none.
func AuthorizeRequired(g *Grants, cmd, db string, body bson.Raw, required []Privilege) error {
	res, action, missing := g.Missing(required)
	if !missing {
		return nil
	}
	switch cmd {
	case "listCollections":
		if trueValue(body.Lookup("authorizedCollections")) && trueValue(body.Lookup("nameOnly")) && g.AnyInDB(db) {
			return nil
		}
	case "renameCollection":
		if renameSameDBAllowed(g, body) {
			return nil
		}
	case "rolesInfo":
		// Roles the client holds need no viewRole; the others still do.
		if names, err := namesArg(db, body.Lookup(cmd), "role"); err == nil {
			var rest []Privilege
			for _, n := range names {
				if !slices.Contains(g.Roles(), n) {
					rest = append(rest, onDB(n.DB, acts("viewRole")))
				}
			}
			if res, action, missing = g.Missing(rest); !missing {
				return nil
			}
		}
	}
	return &UnauthorizedError{Command: cmd, DB: db, Resource: res, Action: action}
}

func renameSameDBAllowed(g *Grants, body bson.Raw) bool {
	src, dst, err := renameNamespaces(body)
	if err != nil || src.DB != dst.DB || !isNormalCollection(src.DB, src.Collection) ||
		!isNormalCollection(dst.DB, dst.Collection) {
		return false
	}
	if !g.Allows(Resource{DB: src.DB}, "renameCollectionSameDB") {
		return false
	}
	if trueValue(body.Lookup("dropTarget")) && !g.Allows(dst, "dropCollection") {
		return false
	}
	return g.Allows(src, "find") || !g.Allows(dst, "find")
}

// AnyInDB reports whether g grants anything at all within db, as MongoDB's
// isAuthorizedForAnyActionOnAnyResourceInDB: the server lists such
// databases to a client without listDatabases.
func (g *Grants) AnyInDB(db string) bool {
	if g == nil {
		return false
	}
	for res, set := range g.privs {
		if len(set) == 0 {
			continue
		}
		switch {
		case res.AnyResource:
			return true
		case res.Cluster:
		case res.DB == "" && res.Collection == "":
			if !specialDB(db) {
				return true
			}
		case res.DB == "":
			return true // a collection name in every database
		case res.DB == db:
			return true
		}
	}
	return false
}
