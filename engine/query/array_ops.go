package query

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// arraySize is $size: arrays with exactly that many elements.
type arraySize int

func (n arraySize) test(v bsoncore.Value) bool {
	if v.Type != bsoncore.TypeArray {
		return false
	}
	count := 0
	it := bsonvalue.ElementsOf(v.Data)
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		count++
	}
	return count == int(n)
}

func compileSize(op operand) (fieldExpr, error) {
	var n int64
	switch op.value.Type {
	case bsoncore.TypeInt32:
		i, _ := op.value.Int32OK()
		n = int64(i)
	case bsoncore.TypeInt64:
		n, _ = op.value.Int64OK()
		if n < math.MinInt32 || n > math.MaxInt32 {
			return nil, mongoerr.New(mongoerr.BadValue, "$size must be representable as a 32-bit integer")
		}
	case bsoncore.TypeDouble:
		f, _ := op.value.DoubleOK()
		if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
			return nil, mongoerr.New(mongoerr.BadValue, "$size must be a whole number")
		}
		n = int64(f)
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "$size needs a number")
	}
	if n < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "$size may not be negative")
	}
	return &leafExpr{pred: arraySize(n)}, nil
}

// elemMatchObject is $elemMatch with a filter: arrays with an element that
// is a document (or an array, which is one underneath) matching the filter.
type elemMatchObject struct {
	filter node
}

func (m *elemMatchObject) test(v bsoncore.Value) bool {
	return m.pick(v) >= 0
}

func (m *elemMatchObject) pick(v bsoncore.Value) int {
	return firstElementWhere(v, func(e bsoncore.Value) bool { return isContainer(e) && m.filter.match(e.Data, nil) })
}

// firstElementWhere returns the index of the first element of the array v
// that satisfies ok, or -1 (also when v is not an array).
func firstElementWhere(v bsoncore.Value, ok func(bsoncore.Value) bool) int {
	if v.Type != bsoncore.TypeArray {
		return -1
	}
	it := bsonvalue.ElementsOf(v.Data)
	for i := 0; ; i++ {
		_, e, more := it.Next()
		if !more {
			return -1
		}
		if ok(e) {
			return i
		}
	}
}

// elemMatchValue is $elemMatch with operators: arrays with an element that
// satisfies all of them at once.
type elemMatchValue struct {
	conditions allExpr
}

func (m *elemMatchValue) test(v bsoncore.Value) bool {
	return m.pick(v) >= 0
}

func (m *elemMatchValue) pick(v bsoncore.Value) int {
	return firstElementWhere(v, m.conditions.matchValue)
}

func compileElemMatch(op operand) (fieldExpr, error) {
	if op.value.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$elemMatch needs an Object")
	}
	var pred predicate
	if isElemMatchValue(op.value.Data) {
		// MongoDB compiles these operators for an empty path, which shows
		// in its error messages.
		exprs, err := compileOperators("", op.value.Data, op.coll)
		if err != nil {
			return nil, err
		}
		pred = &elemMatchValue{conditions: exprs}
	} else {
		filter, err := compileDocument(op.value.Data, level{subDocument: true, coll: op.coll})
		if err != nil {
			return nil, err
		}
		pred = &elemMatchObject{filter: filter}
	}
	return &leafExpr{pred: pred}, nil
}

// isElemMatchValue tells the two forms of $elemMatch apart: {$gt: 1} holds
// operators on the elements themselves, while {b: 1}, {$or: [...]} and DBRef
// fields are filters on element documents.
func isElemMatchValue(doc []byte) bool {
	first := bsonvalue.FirstKey(doc)
	if !strings.HasPrefix(first, "$") {
		return false
	}
	if _, pathless := topLevelOperators[first]; pathless {
		return false
	}
	for _, dbRefField := range []string{"$ref", "$id", "$db"} {
		if _, ok := bsonvalue.Lookup(doc, dbRefField); ok {
			return false
		}
	}
	return true
}

// compileAll compiles $all: one expression per listed value, each of which
// some value of the path must match.
func compileAll(op operand) (fieldExpr, error) {
	if op.value.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.BadValue, "$all needs an array")
	}
	if isEmptyContainer(op.value.Data) {
		return constant(false), nil
	}
	var all allExpr
	elemMatches := startsWithElemMatch(op.value.Data)
	it := bsonvalue.ElementsOf(op.value.Data)
	for {
		_, e, ok := it.Next()
		if !ok {
			return all, nil
		}
		var expr fieldExpr
		var err error
		switch {
		case elemMatches:
			if !isElemMatchDocument(e) {
				return nil, mongoerr.New(mongoerr.BadValue, "$all/$elemMatch has to be consistent")
			}
			first, _ := bsonvalue.Lookup(e.Data, "$elemMatch")
			expr, err = compileElemMatch(operand{path: op.path, name: "$elemMatch", value: first, siblings: e.Data, coll: op.coll})
		case e.Type == bsoncore.TypeRegex:
			var re *bsonvalue.Regex
			re, err = compileRegexValue(e)
			expr = &leafExpr{pred: regexPred{re}, leafArrays: true}
		case e.Type == bsoncore.TypeEmbeddedDocument && isFieldOperator(bsonvalue.FirstKey(e.Data)):
			return nil, mongoerr.New(mongoerr.BadValue, "no $ expressions in $all")
		default:
			expr, err = compileEquality(e, op.coll)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, expr)
	}
}

// startsWithElemMatch reports whether $all lists $elemMatch expressions, as
// told by its first element.
func startsWithElemMatch(list []byte) bool {
	it := bsonvalue.ElementsOf(list)
	_, first, _ := it.Next()
	return isElemMatchDocument(first)
}

func isElemMatchDocument(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeEmbeddedDocument && bsonvalue.FirstKey(v.Data) == "$elemMatch"
}

func isFieldOperator(name string) bool {
	_, ok := fieldOperators[name]
	return ok
}
