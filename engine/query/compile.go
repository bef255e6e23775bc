package query

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// level is the context a filter compiles in: whether it is against the
// whole document, where $expr and $text are allowed, or against an array
// element inside $elemMatch, where they are not; and the value of $$NOW in
// $expr, the time of the command (zero means the time of compilation).
type level struct {
	subDocument bool
	now         time.Time
	coll        *collation.Collator // strings compare under it; nil is simple
}

// operand is one operator of an operator document such as {$gt: 1, $lt: 5},
// with the context compiling it may need.
type operand struct {
	path  string // the field, for error messages
	name  string // the operator, "$gt"
	value bsoncore.Value
	// siblings is the whole operator document: $regex and $options read
	// each other.
	siblings []byte
	coll     *collation.Collator
}

type (
	fieldOperator    func(op operand) (fieldExpr, error)
	topLevelOperator func(v bsoncore.Value, lvl level) (node, error)
)

// The operator tables are filled in by init because the compilers they hold
// refer back to them through nested filters.
var (
	fieldOperators    map[string]fieldOperator
	topLevelOperators map[string]topLevelOperator
)

func init() {
	fieldOperators = map[string]fieldOperator{
		"$eq":            compileEq,
		"$ne":            compileNe,
		"$gt":            compileOrdering(opGT),
		"$gte":           compileOrdering(opGTE),
		"$lt":            compileOrdering(opLT),
		"$lte":           compileOrdering(opLTE),
		"$in":            compileIn,
		"$nin":           compileNin,
		"$exists":        compileExists,
		"$type":          compileType,
		"$size":          compileSize,
		"$all":           compileAll,
		"$elemMatch":     compileElemMatch,
		"$regex":         compileRegexOperator,
		"$options":       compileOptions,
		"$not":           compileNot,
		"$mod":           compileMod,
		"$bitsAllSet":    compileBitTest(bitsAllSet),
		"$bitsAnySet":    compileBitTest(bitsAnySet),
		"$bitsAllClear":  compileBitTest(bitsAllClear),
		"$bitsAnyClear":  compileBitTest(bitsAnyClear),
		"$near":          compileNear,
		"$nearSphere":    compileNear,
		"$maxDistance":   compileNearBound,
		"$minDistance":   compileNearBound,
		"$geoWithin":     compileGeoWithin,
		"$geoIntersects": compileGeoIntersects,
		"$within":        compileGeoWithin,
	}
	topLevelOperators = map[string]topLevelOperator{
		"$and":         compileLogical("$and", func(n []node) node { return andNode(n) }),
		"$or":          compileLogical("$or", func(n []node) node { return orNode(n) }),
		"$nor":         compileLogical("$nor", func(n []node) node { return norNode(n) }),
		"$comment":     compileComment,
		"$expr":        compileExprOperator,
		"$sampleRate":  compileSampleRate,
		"$alwaysTrue":  compileAlways(true),
		"$alwaysFalse": compileAlways(false),
		"$where":       refuseWhere,
		"$text":        compileText,
		"$jsonSchema":  compileJSONSchema,
		// A document may hold DBRef fields; the query names them directly.
		"$ref": compileDBRefField("$ref"),
		"$id":  compileDBRefField("$id"),
		"$db":  compileDBRefField("$db"),
	}
}

// compileDocument compiles a filter document: the conjunction of its fields.
func compileDocument(doc []byte, lvl level) (node, error) {
	var conj andNode
	it := bsonvalue.ElementsOf(doc)
	for {
		name, v, ok := it.Next()
		if !ok {
			break
		}
		key := string(name)
		if strings.HasPrefix(key, "$") {
			compileOp, ok := topLevelOperators[key]
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "unknown top level operator: %s", key)
			}
			n, err := compileOp(v, lvl)
			if err != nil {
				return nil, err
			}
			if n != nil {
				conj = append(conj, n)
			}
			continue
		}
		exprs, err := compileField(key, v, lvl.coll)
		if err != nil {
			return nil, err
		}
		parts := splitPath(key)
		for _, e := range exprs {
			conj = append(conj, &fieldNode{path: key, parts: parts, expr: e})
		}
	}
	switch len(conj) {
	case 0:
		return constant(true), nil
	case 1:
		return conj[0], nil
	}
	return conj, nil
}

// compileField compiles the value given for a field: an operator document,
// a regular expression, or a value to compare for equality.
func compileField(path string, v bsoncore.Value, coll *collation.Collator) ([]fieldExpr, error) {
	switch {
	case isOperatorDocument(v):
		return compileOperators(path, v.Data, coll)
	case v.Type == bsoncore.TypeRegex:
		re, err := compileRegexValue(v)
		if err != nil {
			return nil, err
		}
		return []fieldExpr{&leafExpr{pred: regexPred{re}, leafArrays: true}}, nil
	}
	e, err := compileEquality(v, coll)
	if err != nil {
		return nil, err
	}
	return []fieldExpr{e}, nil
}

// compileOperators compiles an operator document, one expression per
// operator.
func compileOperators(path string, ops []byte, coll *collation.Collator) ([]fieldExpr, error) {
	var exprs []fieldExpr
	it := bsonvalue.ElementsOf(ops)
	for {
		name, v, ok := it.Next()
		if !ok {
			return exprs, nil
		}
		op := operand{path: path, name: string(name), value: v, siblings: ops, coll: coll}
		compileOp, ok := fieldOperators[op.name]
		if !ok {
			if op.name == "$where" {
				return nil, mongoerr.New(mongoerr.BadValue, "$where cannot be applied to a field")
			}
			return nil, mongoerr.New(mongoerr.BadValue, "unknown operator: %s", op.name)
		}
		e, err := compileOp(op)
		if err != nil {
			return nil, err
		}
		if e != nil {
			exprs = append(exprs, e)
		}
	}
}

// isOperatorDocument reports whether a field's value is an operator document
// like {$gt: 1} rather than a document to compare with: its first field
// starts with '$', and it is not a DBRef ({$ref: ..., $id: ...}).
func isOperatorDocument(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument || !strings.HasPrefix(bsonvalue.FirstKey(v.Data), "$") {
		return false
	}
	_, hasRef := bsonvalue.Lookup(v.Data, "$ref")
	_, hasID := bsonvalue.Lookup(v.Data, "$id")
	return !(hasRef && hasID)
}

func compileComment(bsoncore.Value, level) (node, error) {
	return nil, nil
}

func compileAlways(result bool) topLevelOperator {
	return func(v bsoncore.Value, _ level) (node, error) {
		if n, ok := bsonvalue.IntegerValue(v); !ok || n != 1 {
			name := "$alwaysFalse"
			if result {
				name = "$alwaysTrue"
			}
			return nil, mongoerr.New(mongoerr.FailedToParse, "%s must be an integer value of 1", name)
		}
		return constant(result), nil
	}
}

func compileDBRefField(name string) topLevelOperator {
	return func(v bsoncore.Value, lvl level) (node, error) {
		e, err := compileEquality(v, lvl.coll)
		if err != nil {
			return nil, err
		}
		return &fieldNode{path: name, parts: []string{name}, expr: e}, nil
	}
}

func refuseWhere(bsoncore.Value, level) (node, error) {
	// MongoDB answers the same when server-side JavaScript is disabled.
	return nil, mongoerr.New(mongoerr.BadValue, "$where is not supported: Lethe does not run server-side JavaScript")
}

func invalidBSON(err error) error {
	return mongoerr.New(mongoerr.InvalidBSON, "invalid filter document: %v", err)
}
