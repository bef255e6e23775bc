package query

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// cmpOp is a comparison operator.
type cmpOp uint8

const (
	opEQ cmpOp = iota
	opGT
	opGTE
	opLT
	opLTE
)

func (op cmpOp) String() string {
	return [...]string{"$eq", "$gt", "$gte", "$lt", "$lte"}[op]
}

// admitsEqual reports whether values that compare equal satisfy op.
func (op cmpOp) admitsEqual() bool {
	return op == opEQ || op == opGTE || op == opLTE
}

// comparison compares values with a constant. Values of different type
// classes never match ({a: {$gt: 5}} does not match strings), except that
// null also matches a missing field, and MinKey and MaxKey bound everything,
// missing fields included. As in MongoDB 8.0, null no longer matches the
// deprecated undefined.
//
// Under a collation, rhs is the constant's collation key value and each
// value is turned into its own before comparing; coll is nil when the
// constant holds no string, which no collation can then affect.
type comparison struct {
	op    cmpOp
	rhs   bsoncore.Value
	class int
	nan   bool
	coll  *collation.Collator
}

func newComparison(op cmpOp, rhs bsoncore.Value, coll *collation.Collator) *comparison {
	if !collation.Collatable(rhs) {
		coll = nil
	}
	return &comparison{op: op, rhs: coll.Key(rhs), class: keycodec.TypeClass(rhs.Type), nan: isNaN(rhs), coll: coll}
}

func (c *comparison) test(v bsoncore.Value) bool {
	if v.Type == 0 || keycodec.TypeClass(v.Type) != c.class {
		return c.matchesAcrossClasses(v)
	}
	v = c.coll.Key(v)
	if vNaN := isNaN(v); vNaN || c.nan {
		// NaN equals NaN and is neither above nor below any number.
		return vNaN && c.nan && c.op.admitsEqual()
	}
	r := keycodec.Compare(v, c.rhs)
	switch c.op {
	case opEQ:
		return r == 0
	case opGT:
		return r > 0
	case opGTE:
		return r >= 0
	case opLT:
		return r < 0
	}
	return r <= 0
}

func (c *comparison) matchesAcrossClasses(v bsoncore.Value) bool {
	switch c.rhs.Type {
	case bsoncore.TypeNull:
		return v.Type == 0 && c.op.admitsEqual()
	case bsoncore.TypeMaxKey:
		return c.op == opLT || c.op == opLTE
	case bsoncore.TypeMinKey:
		return c.op == opGT || c.op == opGTE
	}
	return false
}

// compileEquality compiles {a: v} and {a: {$eq: v}}. A regular expression
// here is a value to compare, not a pattern to match.
func compileEquality(v bsoncore.Value, coll *collation.Collator) (fieldExpr, error) {
	if v.Type == bsoncore.TypeUndefined {
		return nil, mongoerr.New(mongoerr.BadValue, "cannot compare to undefined")
	}
	return &leafExpr{pred: newComparison(opEQ, v, coll), leafArrays: true}, nil
}

func compileEq(op operand) (fieldExpr, error) {
	return compileEquality(op.value, op.coll)
}

func compileNe(op operand) (fieldExpr, error) {
	if op.value.Type == bsoncore.TypeRegex {
		return nil, mongoerr.New(mongoerr.BadValue, "Can't have regex as arg to $ne.")
	}
	eq, err := compileEquality(op.value, op.coll)
	if err != nil {
		return nil, err
	}
	return notExpr{eq}, nil
}

func compileOrdering(cmp cmpOp) fieldOperator {
	return func(op operand) (fieldExpr, error) {
		switch op.value.Type {
		case bsoncore.TypeRegex:
			return nil, mongoerr.New(mongoerr.BadValue, "Can't have RegEx as arg to predicate over field '%s'.", op.path)
		case bsoncore.TypeUndefined:
			return nil, mongoerr.New(mongoerr.BadValue, "cannot compare to undefined")
		}
		return &leafExpr{pred: newComparison(cmp, op.value, op.coll), leafArrays: true}, nil
	}
}

// inList is $in: equality with any of a set of values, or a match of any of
// a set of regular expressions.
type inList struct {
	values  []bsoncore.Value // in keycodec order, for binary search
	hasNull bool
	regexes []*bsonvalue.Regex
	// coll is the collation the values are key values of; nil when
	// none holds a string.
	coll *collation.Collator
}

func (in *inList) test(v bsoncore.Value) bool {
	if v.Type == 0 {
		// A null in the list brings {$eq: null}'s meaning along.
		return in.hasNull
	}
	if _, found := slices.BinarySearchFunc(in.values, in.coll.Key(v), keycodec.Compare); found {
		return true
	}
	for _, re := range in.regexes {
		if re.Match(v) {
			return true
		}
	}
	return false
}

func compileIn(op operand) (fieldExpr, error) {
	in, err := compileInList(op)
	if err != nil {
		return nil, err
	}
	return &leafExpr{pred: in, leafArrays: true}, nil
}

func compileNin(op operand) (fieldExpr, error) {
	in, err := compileInList(op)
	if err != nil {
		return nil, err
	}
	return notExpr{&leafExpr{pred: in, leafArrays: true}}, nil
}

func compileInList(op operand) (*inList, error) {
	if op.value.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.BadValue, "%s needs an array", op.name)
	}
	in := &inList{}
	it := bsonvalue.ElementsOf(op.value.Data)
	for {
		_, e, ok := it.Next()
		if !ok {
			break
		}
		switch {
		case isOperatorDocument(e):
			return nil, mongoerr.New(mongoerr.BadValue, "cannot nest $ under $in")
		case e.Type == bsoncore.TypeUndefined:
			return nil, mongoerr.New(mongoerr.BadValue, "InMatchExpression equality cannot be undefined")
		case e.Type == bsoncore.TypeRegex:
			re, err := compileRegexValue(e)
			if err != nil {
				return nil, err
			}
			in.regexes = append(in.regexes, re)
		default:
			in.hasNull = in.hasNull || e.Type == bsoncore.TypeNull
			in.values = append(in.values, e)
			if op.coll != nil && collation.Collatable(e) {
				in.coll = op.coll
			}
		}
	}
	for i, v := range in.values {
		in.values[i] = in.coll.Key(v)
	}
	slices.SortStableFunc(in.values, keycodec.Compare)
	return in, nil
}
