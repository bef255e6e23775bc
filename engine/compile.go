package engine

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// This file is the server's way into the engine's languages. The server
// parses commands and hands the engine the raw filters, updates and
// stages inside them; whatever must be compiled or checked before the
// engine runs them is compiled here, so the server imports no language
// package and a change to a language's API stays inside the engine.

// MaxExpressionValueBytes bounds any string, array or document an
// expression builds (BSONObjectTooLarge past it), and
// MaxExpressionHeldBytes the values one expression holds at once
// (ExceededMemoryLimit); lethe --help lists both.
const (
	MaxExpressionValueBytes = expr.MaxValueBytes
	MaxExpressionHeldBytes  = expr.MaxHeldBytes
)

// CompileUpdate compiles an update statement's u, a document (operators
// or a replacement) or a pipeline, for a command that started at now.
// The variables of lv are bound in a pipeline's expressions; multi
// refuses a replacement, as MongoDB does.
func CompileUpdate(u bson.RawValue, arrayFilters []bson.Raw, multi bool, lv *Let, now time.Time) (*update.Update, error) {
	return compileUpdateUnder(u, arrayFilters, multi, lv, now, nil)
}

// compileUpdateUnder is CompileUpdate under a collation (CompileUpdateFor).
func compileUpdateUnder(u bson.RawValue, arrayFilters []bson.Raw, multi bool, lv *Let, now time.Time, coll *collation.Collator) (*update.Update, error) {
	switch u.Type {
	case bson.TypeEmbeddedDocument:
		up, err := update.Compile(u.Document(), update.Options{Now: now, ArrayFilters: arrayFilters, Collator: coll})
		if err != nil {
			return nil, err
		}
		if multi && up.IsReplacement() {
			return nil, mongoerr.New(mongoerr.FailedToParse, "multi update is not supported for replacement-style update")
		}
		return up, nil
	case bson.TypeArray:
		vals, err := u.Array().Values()
		if err != nil {
			return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid update pipeline: %v", err)
		}
		stages := make([]bson.Raw, 0, len(vals))
		for _, v := range vals {
			d, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
			}
			stages = append(stages, d)
		}
		if stages, err = lv.Pipeline(stages); err != nil {
			return nil, err
		}
		return update.CompilePipeline(stages, update.Options{Now: now, ArrayFilters: arrayFilters, Collator: coll})
	}
	return nil, mongoerr.New(mongoerr.FailedToParse, "Update argument must be either an object or an array")
}

// CompileUpdateDoc compiles an update document (operators or a
// replacement) that uses no array filters and no $$NOW: the updates the
// server writes itself, to users, roles and the auth schema version.
func CompileUpdateDoc(doc bson.Raw) (*update.Update, error) {
	return update.Compile(doc, update.Options{})
}

// MatchCatalog compiles the filter of listDatabases or listCollections,
// a query filter over the entries they list, evaluated at now.
func MatchCatalog(filter bson.Raw, now time.Time) (func(entry bson.Raw) bool, error) {
	f, err := query.CompileWith(filter, query.Options{Now: now})
	if err != nil {
		return nil, err
	}
	return f.Match, nil
}

// CurrentOpSpec is the argument of $currentOp, whose documents the
// server makes (it knows the connections).
type CurrentOpSpec = pipeline.CurrentOpSpec

// LocalSessionsSpec is the argument of $listLocalSessions, whose
// documents the server makes (it knows the sessions).
type LocalSessionsSpec = pipeline.SessionsSpec

// StageOf returns the name and argument of an aggregation stage, with
// the error MongoDB gives for a stage that is not one field.
func StageOf(stage bson.Raw) (string, bson.RawValue, error) { return pipeline.StageOf(stage) }

// KnownStage reports whether name is an aggregation stage the engine
// implements.
func KnownStage(name string) bool { return pipeline.Known(name) }

// CheckPipelineNamespace applies MongoDB's rules on where the metadata
// stages may run: a database pipeline ({aggregate: 1}) is collectionless.
func CheckPipelineNamespace(stages []bson.Raw, db string, collectionless bool) error {
	return pipeline.CheckNamespace(stages, db, collectionless)
}

// ParseCurrentOp parses the argument of $currentOp.
func ParseCurrentOp(arg bson.RawValue) (CurrentOpSpec, error) { return pipeline.ParseCurrentOp(arg) }

// ParseListLocalSessions parses the argument of $listLocalSessions.
func ParseListLocalSessions(arg bson.RawValue) (LocalSessionsSpec, error) {
	return pipeline.ParseListLocalSessions(arg)
}
