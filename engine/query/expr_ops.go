package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
)

// MongoDB's codes for expression errors.
const (
	codeArity            mongoerr.Code = 16020
	codeAddType          mongoerr.Code = 16554
	codeMultiplyType     mongoerr.Code = 16555
	codeSubtractType     mongoerr.Code = 16556
	codeDivideByZero     mongoerr.Code = 16608
	codeDivideType       mongoerr.Code = 16609
	codeModByZero        mongoerr.Code = 16610
	codeModType          mongoerr.Code = 16611
	codeAddTwoDates      mongoerr.Code = 16612
	codeCondMissingIf    mongoerr.Code = 17080
	codeCondMissingThen  mongoerr.Code = 17081
	codeCondMissingElse  mongoerr.Code = 17082
	codeCondUnknownField mongoerr.Code = 17083
	codeSizeType         mongoerr.Code = 17124
	codeAbsOverflow      mongoerr.Code = 28680
	codeAbsType          mongoerr.Code = 28765
	codeInType           mongoerr.Code = 40081
	codeIfNullArity      mongoerr.Code = 1257300
)

func init() {
	exprOperators = map[string]exprOperator{
		"$literal":  compileLiteral,
		"$eq":       compileCmpExpr,
		"$ne":       compileCmpExpr,
		"$gt":       compileCmpExpr,
		"$gte":      compileCmpExpr,
		"$lt":       compileCmpExpr,
		"$lte":      compileCmpExpr,
		"$cmp":      compileCmpExpr,
		"$and":      compileAndOrExpr,
		"$or":       compileAndOrExpr,
		"$not":      compileNotExpr,
		"$add":      compileArithmetic,
		"$multiply": compileArithmetic,
		"$subtract": compileArithmetic,
		"$divide":   compileArithmetic,
		"$mod":      compileArithmetic,
		"$abs":      compileArithmetic,
		"$cond":     compileCond,
		"$ifNull":   compileIfNull,
		"$in":       compileInExpr,
		"$size":     compileSizeExpr,
	}
}

// compileArgs compiles an operator's arguments: the elements of an array,
// or a single argument given on its own.
func compileArgs(args bsoncore.Value) ([]exprNode, error) {
	if args.Type == bsoncore.TypeArray {
		return compileExprList(args.Data)
	}
	n, err := compileExpr(args)
	if err != nil {
		return nil, err
	}
	return []exprNode{n}, nil
}

func compileFixedArgs(name string, args bsoncore.Value, want int) ([]exprNode, error) {
	nodes, err := compileArgs(args)
	if err != nil {
		return nil, err
	}
	if len(nodes) != want {
		return nil, mongoerr.New(codeArity, "Expression %s takes exactly %d arguments. %d were passed in.", name, want, len(nodes))
	}
	return nodes, nil
}

// evalArgs evaluates arguments in order.
func evalArgs(root []byte, nodes []exprNode) ([]bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(nodes))
	for i, n := range nodes {
		v, err := n.eval(root)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

func compileLiteral(_ string, args bsoncore.Value) (exprNode, error) {
	return literal{args}, nil
}

// isNullish reports whether v is null, undefined or missing, which most
// operators turn into a null result.
func isNullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// compareExprValues compares values in the aggregation order: the full BSON
// order across types, where missing ranks with undefined, below null.
func compareExprValues(a, b bsoncore.Value) int {
	if a.Type == 0 {
		a = undefinedValue
	}
	if b.Type == 0 {
		b = undefinedValue
	}
	return keycodec.Compare(a, b)
}

// cmpExpr is a comparison operator: $eq, $ne, $gt, $gte, $lt, $lte, $cmp.
type cmpExpr struct {
	name string
	a, b exprNode
}

func compileCmpExpr(name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := compileFixedArgs(name, args, 2)
	if err != nil {
		return nil, err
	}
	return &cmpExpr{name: name, a: nodes[0], b: nodes[1]}, nil
}

func (c *cmpExpr) eval(root []byte) (bsoncore.Value, error) {
	a, err := c.a.eval(root)
	if err != nil {
		return missing, err
	}
	b, err := c.b.eval(root)
	if err != nil {
		return missing, err
	}
	r := compareExprValues(a, b)
	switch c.name {
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

func compileAndOrExpr(name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := compileArgs(args)
	if err != nil {
		return nil, err
	}
	return &andOrExpr{isAnd: name == "$and", args: nodes}, nil
}

func (e *andOrExpr) eval(root []byte) (bsoncore.Value, error) {
	for _, a := range e.args {
		v, err := a.eval(root)
		if err != nil {
			return missing, err
		}
		if truthy(v) != e.isAnd {
			return boolValue(!e.isAnd), nil
		}
	}
	return boolValue(e.isAnd), nil
}

type notExprNode struct {
	arg exprNode
}

func compileNotExpr(name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := compileFixedArgs(name, args, 1)
	if err != nil {
		return nil, err
	}
	return notExprNode{nodes[0]}, nil
}

func (n notExprNode) eval(root []byte) (bsoncore.Value, error) {
	v, err := n.arg.eval(root)
	if err != nil {
		return missing, err
	}
	return boolValue(!truthy(v)), nil
}

// condExpr is $cond.
type condExpr struct {
	cond, then, otherwise exprNode
}

func compileCond(name string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		nodes, err := compileFixedArgs(name, args, 3)
		if err != nil {
			return nil, err
		}
		return &condExpr{nodes[0], nodes[1], nodes[2]}, nil
	}
	c := &condExpr{}
	it := elementsOf(args.Data)
	for {
		key, v, ok := it.next()
		if !ok {
			break
		}
		n, err := compileExpr(v)
		if err != nil {
			return nil, err
		}
		switch string(key) {
		case "if":
			c.cond = n
		case "then":
			c.then = n
		case "else":
			c.otherwise = n
		default:
			return nil, mongoerr.New(codeCondUnknownField, "Unrecognized parameter to $cond: %s", key)
		}
	}
	switch {
	case c.cond == nil:
		return nil, mongoerr.New(codeCondMissingIf, "Missing 'if' parameter to $cond")
	case c.then == nil:
		return nil, mongoerr.New(codeCondMissingThen, "Missing 'then' parameter to $cond")
	case c.otherwise == nil:
		return nil, mongoerr.New(codeCondMissingElse, "Missing 'else' parameter to $cond")
	}
	return c, nil
}

func (c *condExpr) eval(root []byte) (bsoncore.Value, error) {
	v, err := c.cond.eval(root)
	if err != nil {
		return missing, err
	}
	if truthy(v) {
		return c.then.eval(root)
	}
	return c.otherwise.eval(root)
}

// ifNullExpr is $ifNull: the first argument that is not null or missing, or
// else the last one.
type ifNullExpr []exprNode

func compileIfNull(_ string, args bsoncore.Value) (exprNode, error) {
	nodes, err := compileArgs(args)
	if err != nil {
		return nil, err
	}
	if len(nodes) < 2 {
		return nil, mongoerr.New(codeIfNullArity, "$ifNull needs at least two arguments, had: %d", len(nodes))
	}
	return ifNullExpr(nodes), nil
}

func (e ifNullExpr) eval(root []byte) (bsoncore.Value, error) {
	for i, a := range e {
		v, err := a.eval(root)
		if err != nil || !isNullish(v) || i == len(e)-1 {
			return v, err
		}
	}
	return missing, nil
}

// inExpr is the aggregation $in: whether a value is an element of an array.
type inExpr struct {
	value, list exprNode
}

func compileInExpr(name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := compileFixedArgs(name, args, 2)
	if err != nil {
		return nil, err
	}
	return &inExpr{nodes[0], nodes[1]}, nil
}

func (e *inExpr) eval(root []byte) (bsoncore.Value, error) {
	vals, err := evalArgs(root, []exprNode{e.value, e.list})
	if err != nil {
		return missing, err
	}
	if vals[1].Type != bsoncore.TypeArray {
		return missing, mongoerr.New(codeInType, "$in requires an array as a second argument, found: %s", typeName(vals[1].Type))
	}
	it := elementsOf(vals[1].Data)
	for {
		_, elem, ok := it.next()
		if !ok {
			return boolValue(false), nil
		}
		if compareExprValues(vals[0], elem) == 0 {
			return boolValue(true), nil
		}
	}
}

// sizeExpr is the aggregation $size: the length of an array.
type sizeExpr struct {
	arg exprNode
}

func compileSizeExpr(name string, args bsoncore.Value) (exprNode, error) {
	nodes, err := compileFixedArgs(name, args, 1)
	if err != nil {
		return nil, err
	}
	return sizeExpr{nodes[0]}, nil
}

func (e sizeExpr) eval(root []byte) (bsoncore.Value, error) {
	v, err := e.arg.eval(root)
	if err != nil {
		return missing, err
	}
	if v.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(codeSizeType, "The argument to $size must be an array. Type of argument was: %s", typeName(v.Type))
	}
	n := int32(0)
	it := elementsOf(v.Data)
	for _, _, ok := it.next(); ok; _, _, ok = it.next() {
		n++
	}
	return int32Value(n), nil
}

// arithmeticExpr is one of the arithmetic operators.
type arithmeticExpr struct {
	name string
	args []exprNode
}

func compileArithmetic(name string, args bsoncore.Value) (exprNode, error) {
	var nodes []exprNode
	var err error
	switch name {
	case "$add", "$multiply":
		nodes, err = compileArgs(args)
	case "$abs":
		nodes, err = compileFixedArgs(name, args, 1)
	default:
		nodes, err = compileFixedArgs(name, args, 2)
	}
	if err != nil {
		return nil, err
	}
	return &arithmeticExpr{name: name, args: nodes}, nil
}

func (e *arithmeticExpr) eval(root []byte) (bsoncore.Value, error) {
	vals, err := evalArgs(root, e.args)
	if err != nil {
		return missing, err
	}
	for _, v := range vals {
		if isNullish(v) {
			return nullValue, nil
		}
		if v.Type == bsoncore.TypeDecimal128 {
			return missing, mongoerr.New(mongoerr.NotImplemented, "%s of decimal values is not supported by Lethe", e.name)
		}
	}
	switch e.name {
	case "$add":
		return add(vals)
	case "$multiply":
		return multiply(vals)
	case "$subtract":
		return subtract(vals[0], vals[1])
	case "$divide":
		return divide(vals[0], vals[1])
	case "$mod":
		return mod(vals[0], vals[1])
	}
	return absolute(vals[0])
}

// number is an int32, int64 or double operand of arithmetic. Results keep
// the widest operand type and widen further on overflow, int32 to int64 to
// double, as in MongoDB.
type number struct {
	kind bsoncore.Type
	i    int64
	f    float64
}

func numberOf(v bsoncore.Value) (number, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		return number{kind: v.Type, i: int64(i)}, true
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return number{kind: v.Type, i: i}, true
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return number{kind: v.Type, f: f}, true
	}
	return number{}, false
}

func (n number) float() float64 {
	if n.kind == bsoncore.TypeDouble {
		return n.f
	}
	return float64(n.i)
}

func (n number) value() bsoncore.Value {
	switch n.kind {
	case bsoncore.TypeDouble:
		return doubleValue(n.f)
	case bsoncore.TypeInt32:
		return int32Value(int32(n.i))
	}
	return int64Value(n.i)
}

// integerResult types an integer result of operands of kinds a and b.
func integerResult(a, b bsoncore.Type, i int64) number {
	if a == bsoncore.TypeInt32 && b == bsoncore.TypeInt32 && i >= math.MinInt32 && i <= math.MaxInt32 {
		return number{kind: bsoncore.TypeInt32, i: i}
	}
	return number{kind: bsoncore.TypeInt64, i: i}
}

func addNumbers(a, b number) number {
	if a.kind == bsoncore.TypeDouble || b.kind == bsoncore.TypeDouble {
		return number{kind: bsoncore.TypeDouble, f: a.float() + b.float()}
	}
	sum := a.i + b.i
	if (sum > a.i) != (b.i > 0) {
		return number{kind: bsoncore.TypeDouble, f: a.float() + b.float()}
	}
	return integerResult(a.kind, b.kind, sum)
}

func multiplyNumbers(a, b number) number {
	if a.kind == bsoncore.TypeDouble || b.kind == bsoncore.TypeDouble {
		return number{kind: bsoncore.TypeDouble, f: a.float() * b.float()}
	}
	p := a.i * b.i
	if a.i != 0 && (p/a.i != b.i || a.i == -1 && b.i == math.MinInt64) {
		return number{kind: bsoncore.TypeDouble, f: a.float() * b.float()}
	}
	return integerResult(a.kind, b.kind, p)
}

func abs64(i int64) int64 {
	if i < 0 {
		return -i
	}
	return i
}

func add(vals []bsoncore.Value) (bsoncore.Value, error) {
	sum := number{kind: bsoncore.TypeInt32}
	date := false
	for _, v := range vals {
		if v.Type == bsoncore.TypeDateTime {
			if date {
				return missing, mongoerr.New(codeAddTwoDates, "only one date allowed in an $add expression")
			}
			date = true
			ms, _ := v.DateTimeOK()
			sum = addNumbers(sum, number{kind: bsoncore.TypeInt64, i: ms})
			continue
		}
		n, ok := numberOf(v)
		if !ok {
			return missing, mongoerr.New(codeAddType, "$add only supports numeric or date types, not %s", typeName(v.Type))
		}
		sum = addNumbers(sum, n)
	}
	if date {
		if sum.kind == bsoncore.TypeDouble {
			return dateValue(int64(math.Round(sum.f))), nil
		}
		return dateValue(sum.i), nil
	}
	return sum.value(), nil
}

func multiply(vals []bsoncore.Value) (bsoncore.Value, error) {
	product := number{kind: bsoncore.TypeInt32, i: 1}
	for _, v := range vals {
		n, ok := numberOf(v)
		if !ok {
			return missing, mongoerr.New(codeMultiplyType, "$multiply only supports numeric types, not %s", typeName(v.Type))
		}
		product = multiplyNumbers(product, n)
	}
	return product.value(), nil
}

func subtract(a, b bsoncore.Value) (bsoncore.Value, error) {
	if a.Type == bsoncore.TypeDateTime {
		ms, _ := a.DateTimeOK()
		if b.Type == bsoncore.TypeDateTime {
			other, _ := b.DateTimeOK()
			return int64Value(ms - other), nil
		}
		n, ok := numberOf(b)
		if !ok {
			return missing, mongoerr.New(codeSubtractType, "can't $subtract %s from %s", typeName(b.Type), typeName(a.Type))
		}
		if n.kind == bsoncore.TypeDouble {
			return dateValue(ms - int64(math.Round(n.f))), nil
		}
		return dateValue(ms - n.i), nil
	}
	x, okA := numberOf(a)
	y, okB := numberOf(b)
	if !okA || !okB {
		return missing, mongoerr.New(codeSubtractType, "can't $subtract %s from %s", typeName(b.Type), typeName(a.Type))
	}
	if y.kind != bsoncore.TypeDouble && y.i == math.MinInt64 {
		y = number{kind: bsoncore.TypeDouble, f: y.float()}
	}
	y.i, y.f = -y.i, -y.f
	return addNumbers(x, y).value(), nil
}

func divide(a, b bsoncore.Value) (bsoncore.Value, error) {
	x, okA := numberOf(a)
	y, okB := numberOf(b)
	if !okA || !okB {
		return missing, mongoerr.New(codeDivideType, "$divide only supports numeric types, not %s and %s", typeName(a.Type), typeName(b.Type))
	}
	if y.float() == 0 {
		return missing, mongoerr.New(codeDivideByZero, "can't $divide by zero")
	}
	return doubleValue(x.float() / y.float()), nil
}

func mod(a, b bsoncore.Value) (bsoncore.Value, error) {
	x, okA := numberOf(a)
	y, okB := numberOf(b)
	if !okA || !okB {
		return missing, mongoerr.New(codeModType, "$mod only supports numeric types, not %s and %s", typeName(a.Type), typeName(b.Type))
	}
	if y.float() == 0 {
		return missing, mongoerr.New(codeModByZero, "can't $mod by zero")
	}
	if x.kind == bsoncore.TypeDouble || y.kind == bsoncore.TypeDouble {
		return doubleValue(math.Mod(x.float(), y.float())), nil
	}
	return integerResult(x.kind, y.kind, x.i%y.i).value(), nil
}

func absolute(v bsoncore.Value) (bsoncore.Value, error) {
	n, ok := numberOf(v)
	switch {
	case !ok:
		return missing, mongoerr.New(codeAbsType, "$abs only supports numeric types, not %s", typeName(v.Type))
	case n.kind == bsoncore.TypeDouble:
		return doubleValue(math.Abs(n.f)), nil
	case n.i == math.MinInt64:
		return missing, mongoerr.New(codeAbsOverflow, "can't take $abs of long long min")
	}
	return integerResult(n.kind, n.kind, abs64(n.i)).value(), nil
}
