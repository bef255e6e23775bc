package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/mongoerr"
)

// exprFilter is $expr in a filter: documents for which the expression is
// true. A runtime error, such as adding a string, fails the command in
// MongoDB: it is recorded for MatchErr, and the document does not match.
type exprFilter struct {
	ex *expr.Expr
}

func (f exprFilter) match(doc []byte, st *state) bool {
	v, err := f.ex.Eval(doc)
	if err != nil {
		st.fail(err)
		return false
	}
	return bsonvalue.Truthy(v)
}

func compileExprOperator(v bsoncore.Value, lvl level) (node, error) {
	if lvl.subDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$expr can only be applied to the top-level document")
	}
	ex, err := expr.CompileExprWith(v, expr.ExprOptions{Now: lvl.now, Collator: lvl.coll})
	if err != nil {
		return nil, err
	}
	return exprFilter{ex}, nil
}
