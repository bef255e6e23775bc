package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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

// viewReadCollation checks the collation a read of the view db.coll
// names against the view's, refusing another with
// OptionNotSupportedOnView as mongod does, and returns ctx for the read
// under the view's collation, which its pipeline and the query over it
// use whatever the underlying collection's default.
func (s *Server) viewReadCollation(ctx context.Context, req *Request, coll string) (context.Context, error) {
	view, _ := s.eng.View(ctx, req.DB, coll)
	if v, err := req.Body.LookupErr("collation"); err == nil && v.Type == bson.TypeEmbeddedDocument {
		norm, err := engine.ParseCollation(v.Document())
		if err != nil {
			return ctx, err
		}
		if string(norm) != string(view.Collation) {
			return ctx, mongoerr.New(mongoerr.OptionNotSupportedOnView, "Cannot override a view's default collation")
		}
	}
	if view.Collation == nil {
		return engine.WithCollation(ctx, simpleCollation), nil
	}
	return engine.WithCollation(ctx, view.Collation), nil
}

// simpleCollation is {locale: "simple"}.
var simpleCollation = bson.Raw(bsoncore.NewDocumentBuilder().AppendString("locale", "simple").Build())
