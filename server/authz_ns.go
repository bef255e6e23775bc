package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// authorize checks that the connection's user may run the command. A
// refusal of a command naming an invalid namespace reports the namespace
// instead (InvalidNamespace), as MongoDB does, since its commands parse
// their namespace before they check authorization: an empty or malformed
// collection name is then the client's mistake to fix, for root as for
// anyone (src/mongo/db/service_entry_point_common.cpp parses the command
// before checkAuthorization).
func (s *Server) authorize(ctx context.Context, cmd *commandDef, req *Request) error {
	err := s.authorizePrivileges(ctx, cmd, req)
	if err == nil {
		return nil
	}
	if nsErr := namespaceError(cmd.name, req.DB, req.Body); nsErr != nil {
		return nsErr
	}
	return err
}

// namespaceFirst are the commands whose first value names a collection of
// the request's database.
var namespaceFirst = map[string]bool{
	"find": true, "count": true, "distinct": true, "aggregate": true,
	"insert": true, "update": true, "delete": true, "findAndModify": true,
	"create": true, "drop": true, "collMod": true, "collStats": true, "validate": true,
	"createIndexes": true, "listIndexes": true, "dropIndexes": true,
}

// namespaceError returns the error the command's own parser gives its
// namespace, or nil when the namespace is valid or the command names none.
func namespaceError(cmd, db string, body bson.Raw) error {
	first := command.FirstValue(body)
	if cmd == "explain" {
		inner, ok := first.DocumentOK()
		if !ok {
			return nil
		}
		elems, err := inner.Elements()
		if err != nil || len(elems) == 0 {
			return nil
		}
		return namespaceError(elems[0].Key(), db, inner)
	}
	if !namespaceFirst[cmd] {
		return nil
	}
	name, ok := first.StringValueOK()
	switch {
	case !ok && cmd == "aggregate":
		return nil // {aggregate: 1} runs on the database
	case !ok:
		return mongoerr.New(mongoerr.InvalidNamespace, "collection name has invalid type %s", command.TypeName(first.Type))
	}
	return engine.ValidateNamespace(db, name)
}
