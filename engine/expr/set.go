package expr

import (
	"maps"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// The set operators treat arrays as sets: duplicates, in the aggregation
// order's sense of equal (1 equals 1.0), count once. Like MongoDB, those
// that build a set of several arrays return it in ascending order, and
// $setDifference keeps the order of its first array.

// MongoDB's codes for the set operators. Some come from its optimizer,
// which checks constant arguments before any document is read: Lethe
// checks them when compiling.
const (
	codeAllElementsType    mongoerr.Code = 17040
	codeAnyElementType     mongoerr.Code = 17041
	codeSubsetSecond       mongoerr.Code = 17042
	codeUnionType          mongoerr.Code = 17043
	codeEqualsType         mongoerr.Code = 17044
	codeEqualsArity        mongoerr.Code = 17045
	codeSubsetFirst        mongoerr.Code = 17046
	codeIntersectionType   mongoerr.Code = 17047
	codeDifferenceFirst    mongoerr.Code = 17048
	codeDifferenceSecond   mongoerr.Code = 17049
	codeSubsetFirstOfConst mongoerr.Code = 17310
	codeSubsetConstSecond  mongoerr.Code = 17311
	codeEqualsConstantType mongoerr.Code = 5887502
)

func setOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$setEquals":       compileSetEquals,
		"$setIntersection": variadic(func(n []exprNode) exprNode { return &funcExpr{name: "$setIntersection", args: n, fnC: setIntersection} }),
		"$setUnion":        variadic(func(n []exprNode) exprNode { return &funcExpr{name: "$setUnion", args: n, fnC: setUnion} }),
		"$setDifference":   fixedC(2, setDifference),
		"$setIsSubset":     compileSetIsSubset,
		"$anyElementTrue":  fixed(1, elementsTrue("$anyElementTrue", codeAnyElementType, true)),
		"$allElementsTrue": fixed(1, elementsTrue("$allElementsTrue", codeAllElementsType, false)),
	}
}

// constantValue returns the value of an expression that MongoDB's
// optimizer folds to a constant: a literal, or an array or document of
// them.
func constantValue(n exprNode) (bsoncore.Value, bool) {
	switch n := n.(type) {
	case literal:
		return n.v, true
	case arrayExpr:
		vals := make([]bsoncore.Value, len(n))
		for i, elem := range n {
			v, ok := constantValue(elem)
			if !ok {
				return bsonvalue.Missing, false
			}
			if v.Type == 0 {
				v = bsonvalue.Null
			}
			vals[i] = v
		}
		return arrayValue(vals), true
	}
	return bsonvalue.Missing, false
}

// setKey is a value's index key, which is the same for equal values, so
// that sets can be hashed.
func setKey(coll *collation.Collator, v bsoncore.Value) string {
	return string(keycodec.Append(nil, coll.Key(v)))
}

// sortedSet returns the distinct values among vals in ascending order,
// keeping the first of equal values, with their keys.
func sortedSet(coll *collation.Collator, vals []bsoncore.Value) (set []bsoncore.Value, keys map[string]bool) {
	type keyed struct {
		key string
		v   bsoncore.Value
	}
	all := make([]keyed, len(vals))
	for i, v := range vals {
		all[i] = keyed{setKey(coll, v), v}
	}
	// Keys order as their values do.
	slices.SortStableFunc(all, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	all = slices.CompactFunc(all, func(a, b keyed) bool { return a.key == b.key })
	keys = make(map[string]bool, len(all))
	set = make([]bsoncore.Value, len(all))
	for i, k := range all {
		keys[k.key] = true
		set[i] = k.v
	}
	return set, keys
}

func compileSetEquals(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := c.args(args)
	if err != nil {
		return nil, err
	}
	if len(nodes) < 2 {
		return nil, mongoerr.New(codeEqualsArity, "$setEquals needs at least two arguments had: %d", len(nodes))
	}
	for i, n := range nodes {
		if v, ok := constantValue(n); ok && v.Type != bsoncore.TypeArray {
			return nil, mongoerr.New(codeEqualsConstantType, "All operands of $setEquals must be arrays. %d-th argument is of type: %s", i+1, bsonvalue.TypeName(v.Type))
		}
	}
	return &funcExpr{name: name, args: nodes, fnC: setEquals}, nil
}

func setEquals(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
	var first map[string]bool
	for i, arr := range v {
		if arr.Type != bsoncore.TypeArray {
			return bsonvalue.Missing, mongoerr.New(codeEqualsType, "All operands of $setEquals must be arrays. %d-th argument is of type: %s", i+1, bsonvalue.TypeName(arr.Type))
		}
		_, set := sortedSet(coll, arrayElements(arr))
		if i == 0 {
			first = set
			continue
		}
		if !maps.Equal(first, set) {
			return boolValue(false), nil
		}
	}
	return boolValue(true), nil
}

func setIntersection(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
	var result []bsoncore.Value
	for i, arr := range v {
		switch {
		case isNullish(arr):
			return bsonvalue.Null, nil
		case arr.Type != bsoncore.TypeArray:
			return bsonvalue.Missing, mongoerr.New(codeIntersectionType, "All operands of $setIntersection must be arrays. One argument is of type: %s", bsonvalue.TypeName(arr.Type))
		}
		set, keys := sortedSet(coll, arrayElements(arr))
		if i == 0 {
			result = set
			continue
		}
		result = slices.DeleteFunc(result, func(x bsoncore.Value) bool { return !keys[setKey(coll, x)] })
	}
	return arrayValue(result), nil
}

func setUnion(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
	var all []bsoncore.Value
	for _, arr := range v {
		switch {
		case isNullish(arr):
			return bsonvalue.Null, nil
		case arr.Type != bsoncore.TypeArray:
			return bsonvalue.Missing, mongoerr.New(codeUnionType, "All operands of $setUnion must be arrays. One argument is of type: %s", bsonvalue.TypeName(arr.Type))
		}
		all = append(all, arrayElements(arr)...)
	}
	set, _ := sortedSet(coll, all)
	return arrayValue(set), nil
}

func setDifference(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
	a, b := v[0], v[1]
	switch {
	case isNullish(a) || isNullish(b):
		return bsonvalue.Null, nil
	case a.Type != bsoncore.TypeArray:
		return bsonvalue.Missing, mongoerr.New(codeDifferenceFirst, "both operands of $setDifference must be arrays. First argument is of type: %s", bsonvalue.TypeName(a.Type))
	case b.Type != bsoncore.TypeArray:
		return bsonvalue.Missing, mongoerr.New(codeDifferenceSecond, "both operands of $setDifference must be arrays. Second argument is of type: %s", bsonvalue.TypeName(b.Type))
	}
	// Elements of the first array go into the set as they are kept, so
	// that their duplicates are dropped too.
	_, seen := sortedSet(coll, arrayElements(b))
	out := []bsoncore.Value{}
	for _, x := range arrayElements(a) {
		if k := setKey(coll, x); !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return arrayValue(out), nil
}

func compileSetIsSubset(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := c.fixedArgs(name, args, 2)
	if err != nil {
		return nil, err
	}
	_, firstConstant := constantValue(nodes[0])
	second, secondConstant := constantValue(nodes[1])
	firstCode := codeSubsetFirst
	if secondConstant && !firstConstant {
		// MongoDB's optimizer replaces the operator with one holding the
		// constant set, which has codes of its own.
		if second.Type != bsoncore.TypeArray {
			return nil, mongoerr.New(codeSubsetConstSecond, "both operands of $setIsSubset must be arrays. Second argument is of type: %s", bsonvalue.TypeName(second.Type))
		}
		firstCode = codeSubsetFirstOfConst
	}
	return &funcExpr{name: name, args: nodes, fnC: func(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
		a, b := v[0], v[1]
		switch {
		case a.Type != bsoncore.TypeArray:
			return bsonvalue.Missing, mongoerr.New(firstCode, "both operands of $setIsSubset must be arrays. First argument is of type: %s", bsonvalue.TypeName(a.Type))
		case b.Type != bsoncore.TypeArray:
			return bsonvalue.Missing, mongoerr.New(codeSubsetSecond, "both operands of $setIsSubset must be arrays. Second argument is of type: %s", bsonvalue.TypeName(b.Type))
		}
		_, set := sortedSet(coll, arrayElements(b))
		for _, x := range arrayElements(a) {
			if !set[setKey(coll, x)] {
				return boolValue(false), nil
			}
		}
		return boolValue(true), nil
	}}, nil
}

// elementsTrue makes $anyElementTrue or $allElementsTrue over the truth
// values of an array's elements.
func elementsTrue(name string, code mongoerr.Code, any bool) func([]bsoncore.Value) (bsoncore.Value, error) {
	return func(v []bsoncore.Value) (bsoncore.Value, error) {
		if v[0].Type != bsoncore.TypeArray {
			return bsonvalue.Missing, mongoerr.New(code, "%s's argument must be an array, but is %s", name, bsonvalue.TypeName(v[0].Type))
		}
		for _, x := range arrayElements(v[0]) {
			if bsonvalue.Truthy(x) == any {
				return boolValue(any), nil
			}
		}
		return boolValue(!any), nil
	}
}
