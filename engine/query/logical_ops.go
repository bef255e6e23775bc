package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// compileLogical compiles $and, $or and $nor: a nonempty array of filters.
func compileLogical(name string, combine func([]node) node) topLevelOperator {
	return func(v bsoncore.Value, lvl level) (node, error) {
		if v.Type != bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.BadValue, "%s must be an array", name)
		}
		if isEmptyContainer(v.Data) {
			return nil, mongoerr.New(mongoerr.BadValue, "$and/$or/$nor must be a nonempty array")
		}
		var children []node
		it := bsonvalue.ElementsOf(v.Data)
		for {
			_, e, ok := it.Next()
			if !ok {
				return combine(children), nil
			}
			if e.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.BadValue, "$or/$and/$nor entries need to be full objects")
			}
			child, err := compileDocument(e.Data, lvl)
			if err != nil {
				return nil, err
			}
			children = append(children, child)
		}
	}
}

// compileNot compiles $not: a regular expression or an operator document,
// negated as a whole.
func compileNot(op operand) (fieldExpr, error) {
	switch op.value.Type {
	case bsoncore.TypeRegex:
		re, err := compileRegexValue(op.value)
		if err != nil {
			return nil, err
		}
		return notExpr{&leafExpr{pred: regexPred{re}, leafArrays: true}}, nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "$not needs a regex or a document")
	}
	if isEmptyContainer(op.value.Data) {
		return nil, mongoerr.New(mongoerr.BadValue, "$not cannot be empty")
	}
	exprs, err := compileOperators(op.path, op.value.Data, op.coll)
	if err != nil {
		return nil, err
	}
	return notExpr{allExpr(exprs)}, nil
}
