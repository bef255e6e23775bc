package project

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/mongoerr"
)

// compileExpr compiles the aggregation expression of a computed field.
func compileExpr(v bsoncore.Value, now time.Time, coll *collation.Collator) (*expr.Expr, error) {
	return expr.CompileExprWith(v, expr.ExprOptions{Now: now, Collator: coll})
}

// compileOperator compiles {name: arg}, an operator expression.
func compileOperator(op bsoncore.Element, now time.Time, coll *collation.Collator) (*expr.Expr, error) {
	doc := bsoncore.BuildDocument(nil, op)
	return compileExpr(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, now, coll)
}

// checkFieldNames checks the components of a field path as MongoDB's
// FieldPath does.
func checkFieldNames(path []string) error {
	for _, part := range path {
		switch {
		case part == "":
			return mongoerr.New(mongoerr.Code(15998), "FieldPath field names may not be empty strings.")
		case strings.HasPrefix(part, "$"):
			return mongoerr.New(mongoerr.Code(16410), "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		case strings.ContainsRune(part, 0):
			return mongoerr.New(mongoerr.Code(16411), "FieldPath field names may not contain '\\0'.")
		}
	}
	return nil
}
