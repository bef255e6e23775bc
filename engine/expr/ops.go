package expr

import (
	"maps"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// MongoDB's codes for parsing expressions.
const (
	codeArity       mongoerr.Code = 16020
	codeRangedArity mongoerr.Code = 28667
)

func init() {
	exprOperators = map[string]exprOperator{
		"$literal": compileLiteral,
		"$let":     compileLet,

		"$eq":  compileCmpExpr,
		"$ne":  compileCmpExpr,
		"$gt":  compileCmpExpr,
		"$gte": compileCmpExpr,
		"$lt":  compileCmpExpr,
		"$lte": compileCmpExpr,
		"$cmp": compileCmpExpr,

		"$and": compileAndOrExpr,
		"$or":  compileAndOrExpr,
		"$not": fixed(1, func(v []bsoncore.Value) (bsoncore.Value, error) { return boolValue(!bsonvalue.Truthy(v[0])), nil }),

		"$cond":   compileCond,
		"$ifNull": compileIfNull,
		"$switch": compileSwitch,

		"$add":      variadic(func(n []exprNode) exprNode { return addExpr(n) }),
		"$multiply": variadic(func(n []exprNode) exprNode { return multiplyExpr(n) }),
		"$subtract": fixed(2, subtract),
		"$divide":   fixed(2, divide),
		"$mod":      fixed(2, mod),
		"$abs":      fixed(1, absolute),
		"$sum":      variadic(func(n []exprNode) exprNode { return &funcExpr{args: n, fn: sumOf} }),
		"$avg":      variadic(func(n []exprNode) exprNode { return &funcExpr{args: n, fn: avgOf} }),
		"$max":      variadic(func(n []exprNode) exprNode { return &funcExpr{args: n, fnC: extreme(true)} }),
		"$min":      variadic(func(n []exprNode) exprNode { return &funcExpr{args: n, fnC: extreme(false)} }),

		"$concat":       variadic(func(n []exprNode) exprNode { return concatExpr(n) }),
		"$toUpper":      fixed(1, changeCase(upperASCII)),
		"$toLower":      fixed(1, changeCase(lowerASCII)),
		"$substr":       fixed(3, substrBytes),
		"$substrBytes":  fixed(3, substrBytes),
		"$substrCP":     fixed(3, substrCP),
		"$strLenBytes":  fixed(1, strLenBytes),
		"$strLenCP":     fixed(1, strLenCP),
		"$strcasecmp":   fixed(2, strcasecmp),
		"$split":        fixed(2, split),
		"$indexOfBytes": ranged(2, 4, indexOfBytes),
		"$indexOfCP":    ranged(2, 4, indexOfCP),
		"$trim":         compileTrim,
		"$ltrim":        compileTrim,
		"$rtrim":        compileTrim,
		"$regexMatch":   compileRegexMatch,

		"$in":   fixedC(2, in),
		"$size": fixed(1, size),
		"$isArray": fixed(1, func(v []bsoncore.Value) (bsoncore.Value, error) {
			return boolValue(v[0].Type == bsoncore.TypeArray), nil
		}),
		"$arrayElemAt": fixed(2, func(v []bsoncore.Value) (bsoncore.Value, error) {
			return arrayElemAt("$arrayElemAt", v[0], v[1], false)
		}),
		"$first": fixed(1, func(v []bsoncore.Value) (bsoncore.Value, error) {
			return arrayElemAt("$first", v[0], int32Value(0), true)
		}),
		"$last": fixed(1, func(v []bsoncore.Value) (bsoncore.Value, error) {
			return arrayElemAt("$last", v[0], int32Value(-1), true)
		}),
		"$concatArrays": variadic(func(n []exprNode) exprNode { return concatArraysExpr(n) }),
		"$slice":        ranged(2, 3, slice),
		"$indexOfArray": rangedC(2, 4, indexOfArray),
		"$reverseArray": fixed(1, reverseArray),
		"$range":        ranged(2, 3, rangeOf),
		"$map":          compileIteration("in", false, [...]mongoerr.Code{16878, 16879, 16880, 16882, 16883}),
		"$filter":       compileIteration("cond", true, [...]mongoerr.Code{28646, 28647, 28648, 28650, 28651}),
		"$reduce":       compileReduce,
		"$mergeObjects": variadic(func(n []exprNode) exprNode { return &funcExpr{name: "$mergeObjects", args: n, fn: mergeObjects} }),

		"$type": fixed(1, func(v []bsoncore.Value) (bsoncore.Value, error) {
			return stringValue(bsonvalue.TypeName(v[0].Type)), nil
		}),
		"$isNumber":   fixed(1, func(v []bsoncore.Value) (bsoncore.Value, error) { return boolValue(v[0].IsNumber()), nil }),
		"$convert":    compileConvert,
		"$toBool":     compileConversion(bsoncore.TypeBoolean),
		"$toDate":     compileConversion(bsoncore.TypeDateTime),
		"$toDecimal":  compileConversion(bsoncore.TypeDecimal128),
		"$toDouble":   compileConversion(bsoncore.TypeDouble),
		"$toInt":      compileConversion(bsoncore.TypeInt32),
		"$toLong":     compileConversion(bsoncore.TypeInt64),
		"$toObjectId": compileConversion(bsoncore.TypeObjectID),
		"$toString":   compileConversion(bsoncore.TypeString),
	}
	// Each further family of operators adds its table here.
	for _, family := range []map[string]exprOperator{
		dateOperators(),
		numericSetArrayOperators(),
		miscOperators(),
	} {
		maps.Copy(exprOperators, family)
	}
}

// args compiles an operator's arguments: the elements of an array, or a
// single argument given on its own.
func (c *exprCompiler) args(args bsoncore.Value) ([]exprNode, error) {
	if args.Type == bsoncore.TypeArray {
		return c.compileList(args.Data)
	}
	n, err := c.compile(args)
	if err != nil {
		return nil, err
	}
	return []exprNode{n}, nil
}

func (c *exprCompiler) fixedArgs(name string, args bsoncore.Value, want int) ([]exprNode, error) {
	nodes, err := c.args(args)
	if err != nil {
		return nil, err
	}
	if len(nodes) != want {
		return nil, mongoerr.New(codeArity, "Expression %s takes exactly %d arguments. %d were passed in.", name, want, len(nodes))
	}
	return nodes, nil
}

// rangedArgs compiles the arguments of an operator that takes from least to
// most of them.
func (c *exprCompiler) rangedArgs(name string, args bsoncore.Value, least, most int) ([]exprNode, error) {
	nodes, err := c.args(args)
	if err != nil {
		return nil, err
	}
	if len(nodes) < least || len(nodes) > most {
		return nil, mongoerr.New(codeRangedArity, "Expression %s takes at least %d arguments, and at most %d. %d were passed in.", name, least, most, len(nodes))
	}
	return nodes, nil
}

// evalArgs evaluates arguments in order. The values count as held by the
// evaluation until the caller resets e.held.
func evalArgs(e *env, nodes []exprNode) ([]bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(nodes))
	for i, n := range nodes {
		v, err := n.eval(e)
		if err == nil {
			err = e.hold(v)
		}
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// funcExpr applies a function to the values of its arguments.
type funcExpr struct {
	name string // the operator, for errors
	args []exprNode
	fn   func(vals []bsoncore.Value) (bsoncore.Value, error)
	// fnC replaces fn for the operators that compare values, which they
	// do under the collation of the evaluation.
	fnC func(coll *collation.Collator, vals []bsoncore.Value) (bsoncore.Value, error)
}

func (f *funcExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	vals, err := evalArgs(e, f.args)
	if err != nil {
		return bsonvalue.Missing, err
	}
	var v bsoncore.Value
	if f.fnC != nil {
		v, err = f.fnC(e.coll, vals)
	} else {
		v, err = f.fn(vals)
	}
	// The functions build values at most a little larger than their
	// arguments, which are held in bounds: checking the result suffices.
	if err == nil && len(v.Data) > MaxValueBytes {
		return bsonvalue.Missing, valueTooLarge(f.name, len(v.Data))
	}
	return v, err
}

// fixed makes the compiler of an operator that takes exactly n arguments.
func fixed(n int, fn func([]bsoncore.Value) (bsoncore.Value, error)) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		nodes, err := c.fixedArgs(name, args, n)
		if err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: nodes, fn: fn}, nil
	}
}

// fixedC is fixed for an operator that compares values under a collation.
func fixedC(n int, fn func(*collation.Collator, []bsoncore.Value) (bsoncore.Value, error)) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		nodes, err := c.fixedArgs(name, args, n)
		if err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: nodes, fnC: fn}, nil
	}
}

// rangedC is ranged for an operator that compares values under a
// collation.
func rangedC(least, most int, fn func(*collation.Collator, []bsoncore.Value) (bsoncore.Value, error)) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		nodes, err := c.rangedArgs(name, args, least, most)
		if err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: nodes, fnC: fn}, nil
	}
}

// ranged makes the compiler of an operator that takes from least to most
// arguments; fn sees as many values as were given.
func ranged(least, most int, fn func([]bsoncore.Value) (bsoncore.Value, error)) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		nodes, err := c.rangedArgs(name, args, least, most)
		if err != nil {
			return nil, err
		}
		return &funcExpr{name: name, args: nodes, fn: fn}, nil
	}
}

// readArgs reads the document of named arguments some operators take: the
// value of each of names, in that order, Type 0 where not given. A name
// not among names fails with the error unknown makes.
func readArgs(doc []byte, names []string, unknown func(name string) error) ([]bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(names))
	it := bsonvalue.ElementsOf(doc)
	for {
		key, v, ok := it.Next()
		if !ok {
			return vals, nil
		}
		i := slices.Index(names, string(key))
		if i < 0 {
			return nil, unknown(string(key))
		}
		vals[i] = v
	}
}

// compileGiven compiles the arguments readArgs read; those not given stay
// nil.
func (c *exprCompiler) compileGiven(vals []bsoncore.Value) ([]exprNode, error) {
	nodes := make([]exprNode, len(vals))
	for i, v := range vals {
		if v.Type == 0 {
			continue
		}
		var err error
		if nodes[i], err = c.compile(v); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// compileNamed reads and compiles named arguments.
func (c *exprCompiler) compileNamed(doc []byte, names []string, unknown func(name string) error) ([]exprNode, error) {
	vals, err := readArgs(doc, names, unknown)
	if err != nil {
		return nil, err
	}
	return c.compileGiven(vals)
}

// evalTyped evaluates the argument of an operator that makes null of a
// null argument and wants one of type want, failing with the error
// mismatch makes otherwise. ok is false unless the argument is of that type.
func evalTyped(e *env, n exprNode, want bsoncore.Type, mismatch func(v bsoncore.Value) error) (v bsoncore.Value, ok bool, err error) {
	v, err = n.eval(e)
	switch {
	case err != nil:
		return bsonvalue.Missing, false, err
	case isNullish(v):
		return bsonvalue.Missing, false, nil
	case v.Type != want:
		return bsonvalue.Missing, false, mismatch(v)
	}
	return v, true, nil
}

// variadic makes the compiler of an operator that takes any number of
// arguments, which build makes the node of.
func variadic(build func([]exprNode) exprNode) exprOperator {
	return func(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
		nodes, err := c.args(args)
		if err != nil {
			return nil, err
		}
		return build(nodes), nil
	}
}

// operands evaluates the operands of a variadic operator in order, passing
// each to use, until one is null or missing, which makes the result null:
// null reports that. Later operands are then not evaluated, as in MongoDB.
func operands(e *env, nodes []exprNode, use func(v bsoncore.Value) error) (null bool, err error) {
	for _, n := range nodes {
		v, err := n.eval(e)
		switch {
		case err != nil:
			return false, err
		case isNullish(v):
			return true, nil
		}
		if err := use(v); err != nil {
			return false, err
		}
	}
	return false, nil
}

func compileLiteral(_ *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	return literal{args}, nil
}

// isNullish reports whether v is null, undefined or missing, which most
// operators turn into a null result.
func isNullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// compareExprValues compares values in the aggregation order: the full BSON
// order across types, where missing ranks with undefined, below null.
// Strings compare under coll.
func compareExprValues(coll *collation.Collator, a, b bsoncore.Value) int {
	if a.Type == 0 {
		a = bsonvalue.Undefined
	}
	if b.Type == 0 {
		b = bsonvalue.Undefined
	}
	return coll.Compare(a, b)
}

// cmpExpr is a comparison operator: $eq, $ne, $gt, $gte, $lt, $lte, $cmp.
type cmpExpr struct {
	name string
	a, b exprNode
}

func compileCmpExpr(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := c.fixedArgs(name, args, 2)
	if err != nil {
		return nil, err
	}
	return &cmpExpr{name: name, a: nodes[0], b: nodes[1]}, nil
}

func (x *cmpExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	a, err := x.a.eval(e)
	if err == nil {
		err = e.hold(a)
	}
	if err != nil {
		return bsonvalue.Missing, err
	}
	b, err := x.b.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	r := compareExprValues(e.coll, a, b)
	switch x.name {
	case "$eq":
		return boolValue(r == 0), nil
	case "$ne":
		return boolValue(r != 0), nil
	case "$gt":
		return boolValue(r > 0), nil
	case "$gte":
		return boolValue(r >= 0), nil
	case "$lt":
		return boolValue(r < 0), nil
	case "$lte":
		return boolValue(r <= 0), nil
	}
	return int32Value(int32(r)), nil
}

// andOrExpr is $and or $or over the truth values of its arguments, which it
// evaluates only as far as needed.
type andOrExpr struct {
	isAnd bool
	args  []exprNode
}

func compileAndOrExpr(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	return variadic(func(n []exprNode) exprNode { return &andOrExpr{isAnd: name == "$and", args: n} })(c, name, args)
}

func (x *andOrExpr) eval(e *env) (bsoncore.Value, error) {
	for _, a := range x.args {
		v, err := a.eval(e)
		if err != nil {
			return bsonvalue.Missing, err
		}
		if bsonvalue.Truthy(v) != x.isAnd {
			return boolValue(!x.isAnd), nil
		}
	}
	return boolValue(x.isAnd), nil
}

// condExpr is $cond.
type condExpr struct {
	cond, then, otherwise exprNode
}

func compileCond(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		nodes, err := c.fixedArgs(name, args, 3)
		if err != nil {
			return nil, err
		}
		return &condExpr{nodes[0], nodes[1], nodes[2]}, nil
	}
	nodes, err := c.compileNamed(args.Data, []string{"if", "then", "else"},
		func(name string) error { return mongoerr.New(17083, "Unrecognized parameter to $cond: %s", name) })
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(17080, "Missing 'if' parameter to $cond")
	case nodes[1] == nil:
		return nil, mongoerr.New(17081, "Missing 'then' parameter to $cond")
	case nodes[2] == nil:
		return nil, mongoerr.New(17082, "Missing 'else' parameter to $cond")
	}
	return &condExpr{nodes[0], nodes[1], nodes[2]}, nil
}

func (x *condExpr) eval(e *env) (bsoncore.Value, error) {
	v, err := x.cond.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if bsonvalue.Truthy(v) {
		return x.then.eval(e)
	}
	return x.otherwise.eval(e)
}

// ifNullExpr is $ifNull: the first argument that is not null or missing, or
// else the last one.
type ifNullExpr []exprNode

func compileIfNull(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	nodes, err := c.args(args)
	if err != nil {
		return nil, err
	}
	if len(nodes) < 2 {
		return nil, mongoerr.New(1257300, "$ifNull needs at least two arguments, had: %d", len(nodes))
	}
	return ifNullExpr(nodes), nil
}

func (x ifNullExpr) eval(e *env) (bsoncore.Value, error) {
	for i, a := range x {
		v, err := a.eval(e)
		if err != nil || !isNullish(v) || i == len(x)-1 {
			return v, err
		}
	}
	return bsonvalue.Missing, nil
}

// switchExpr is $switch: the value of the first branch whose case is true,
// or of the default.
type switchExpr struct {
	cases, thens []exprNode
	otherwise    exprNode // nil when there is no default
}

func compileSwitch(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(40060, "$switch requires an object as an argument, found: %s", bsonvalue.TypeName(args.Type))
	}
	vals, err := readArgs(args.Data, []string{"branches", "default"},
		func(name string) error { return mongoerr.New(40067, "$switch found an unknown argument: %s", name) })
	if err != nil {
		return nil, err
	}
	x := &switchExpr{}
	if vals[0].Type != 0 {
		if err := c.compileBranches(x, vals[0]); err != nil {
			return nil, err
		}
	}
	if vals[1].Type != 0 {
		if x.otherwise, err = c.compile(vals[1]); err != nil {
			return nil, err
		}
	}
	if len(x.cases) == 0 {
		return nil, mongoerr.New(40068, "$switch requires at least one branch.")
	}
	return x, nil
}

func (c *exprCompiler) compileBranches(x *switchExpr, branches bsoncore.Value) error {
	if branches.Type != bsoncore.TypeArray {
		return mongoerr.New(40061, "$switch expected an array for 'branches', found: %s", bsonvalue.TypeName(branches.Type))
	}
	it := bsonvalue.ElementsOf(branches.Data)
	for {
		_, b, ok := it.Next()
		if !ok {
			return nil
		}
		if b.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(40062, "$switch expected each branch to be an object, found: %s", bsonvalue.TypeName(b.Type))
		}
		nodes, err := c.compileNamed(b.Data, []string{"case", "then"},
			func(name string) error {
				return mongoerr.New(40063, "$switch found an unknown argument to a branch: %s", name)
			})
		switch {
		case err != nil:
			return err
		case nodes[0] == nil:
			return mongoerr.New(40064, "$switch requires each branch have a 'case' expression")
		case nodes[1] == nil:
			return mongoerr.New(40065, "$switch requires each branch have a 'then' expression.")
		}
		when, then := nodes[0], nodes[1]
		x.cases = append(x.cases, when)
		x.thens = append(x.thens, then)
	}
}

func (x *switchExpr) eval(e *env) (bsoncore.Value, error) {
	for i, when := range x.cases {
		v, err := when.eval(e)
		if err != nil {
			return bsonvalue.Missing, err
		}
		if bsonvalue.Truthy(v) {
			return x.thens[i].eval(e)
		}
	}
	if x.otherwise == nil {
		return bsonvalue.Missing, mongoerr.New(40066, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return x.otherwise.eval(e)
}

// letExpr is $let: in, evaluated with variables bound to values.
type letExpr struct {
	slots []int
	vals  []exprNode
	in    exprNode
}

func compileLet(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(16874, "$let only supports an object as its argument")
	}
	args2, err := readArgs(args.Data, []string{"vars", "in"},
		func(name string) error { return mongoerr.New(16875, "Unrecognized parameter to $let: %s", name) })
	if err != nil {
		return nil, err
	}
	vars, in := args2[0], args2[1]
	switch {
	case vars.Type == 0:
		return nil, mongoerr.New(16876, "Missing 'vars' parameter to $let")
	case in.Type == 0:
		return nil, mongoerr.New(16877, "Missing 'in' parameter to $let")
	case vars.Type != bsoncore.TypeEmbeddedDocument:
		return nil, mongoerr.New(10065, "invalid parameter: expected an object (vars)")
	}
	x := &letExpr{}
	var names []string
	it := bsonvalue.ElementsOf(vars.Data)
	for {
		key, v, ok := it.Next()
		if !ok {
			break
		}
		// The values see the variables around the $let, not its own.
		n, err := c.compile(v)
		if err != nil {
			return nil, err
		}
		if err := checkVariableDefinition(string(key)); err != nil {
			return nil, err
		}
		names = append(names, string(key))
		x.vals = append(x.vals, n)
	}
	if x.in, x.slots, err = c.scope(names, in); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *letExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	// Evaluate every value before binding any, so that none sees another.
	vals, err := evalArgs(e, x.vals)
	if err != nil {
		return bsonvalue.Missing, err
	}
	for i, slot := range x.slots {
		e.vars[slot] = vals[i]
	}
	return x.in.eval(e)
}
