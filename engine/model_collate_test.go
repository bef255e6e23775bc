package engine

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/query"
)

// Collation on the model's writes and aggregates: an update, a delete, a
// findAndModify or an aggregate (without a join) may name a collation, as
// counts and finds do (maybeCollation). The engine takes it in the
// statement's context (WithCollation), as the server gives it; the
// reference compiles the filter, the sort and the update under the same
// collator, so that under {locale: "en", strength: 2} a filter on "x"
// selects the documents that hold "X" too, as MongoDB's collation page
// says of case-insensitive comparisons at strength 1 and 2.

// refFilterOf compiles filter under the collation op names.
func refFilterOf(op *modelOp, filter bson.Raw) (*query.Filter, error) {
	coll, err := refCollator(op.Collation)
	if err != nil {
		return nil, err
	}
	return query.CompileWith(filter, query.Options{Collator: coll})
}

// refSortOf compiles op's sort under the collation op names; nil for
// none.
func refSortOf(op *modelOp) (*query.Sort, error) {
	if op.Sort == nil {
		return nil, nil
	}
	coll, err := refCollator(op.Collation)
	if err != nil {
		return nil, err
	}
	return query.CompileSortWith(op.Sort, coll)
}

// refQueryOf compiles a find-like spec under the collation op names.
func refQueryOf(op *modelOp, spec FindSpec) (*compiledQuery, error) {
	coll, err := refCollator(op.Collation)
	if err != nil {
		return nil, err
	}
	return compileQueryAt(spec, time.Time{}, coll)
}
