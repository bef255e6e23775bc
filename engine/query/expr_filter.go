package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/mongoerr"
)

// exprFilter is $expr in a filter: documents for which the expression is
// true. A runtime error makes the document not match.
type exprFilter struct {
	ex *expr.Expr
}

func (f exprFilter) match(doc []byte, _ *state) bool {
	v, err := f.ex.Eval(doc)
	return err == nil && bsonvalue.Truthy(v)
}

func compileExprOperator(v bsoncore.Value, lvl level) (node, error) {
	if lvl.subDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$expr can only be applied to the top-level document")
	}
	ex, err := expr.CompileExprWith(v, expr.ExprOptions{Now: lvl.now})
	if err != nil {
		return nil, err
	}
	return exprFilter{ex}, nil
}
