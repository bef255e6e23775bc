package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// collationCommands take a collation at their top level, which applies to
// the whole command.
var collationCommands = []string{"find", "aggregate", "count", "distinct", "findAndModify"}

// carryCollation makes the commands that take a collation run with it in
// their context (engine.WithCollation), where the engine finds it: their
// argument parsers only check that it is a document, and the engine
// checks its content as mongod does when the command runs. update's and
// delete's statements carry their own (statementCollation).
func (s *Server) carryCollation() {
	for _, name := range collationCommands {
		cmd := s.commands[name]
		if cmd == nil {
			continue
		}
		next := cmd.handle
		cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
			return next(withBodyCollation(ctx, req.Body), req)
		}
	}
}

// withBodyCollation is ctx with the collation of a command body, if it
// names one.
func withBodyCollation(ctx context.Context, body bson.Raw) context.Context {
	if v, err := body.LookupErr("collation"); err == nil && v.Type == bson.TypeEmbeddedDocument {
		return engine.WithCollation(ctx, v.Document())
	}
	return ctx
}

// statementCollation is ctx for one update or delete statement with the
// collation it names (zero if none).
func statementCollation(ctx context.Context, v bson.RawValue) context.Context {
	if v.Type == bson.TypeEmbeddedDocument {
		return engine.WithCollation(ctx, v.Document())
	}
	return ctx
}

// checkViewCollation refuses a read of a view that names a collation
// other than the view's, which in Lethe is always the simple one, as
// mongod refuses overriding a view's default collation.
func checkViewCollation(body bson.Raw) error {
	v, err := body.LookupErr("collation")
	if err != nil || v.Type != bson.TypeEmbeddedDocument {
		return nil
	}
	norm, err := engine.ParseCollation(v.Document())
	if err != nil {
		return err
	}
	if norm != nil {
		return mongoerr.New(mongoerr.OptionNotSupportedOnView, "Cannot override a view's default collation")
	}
	return nil
}
