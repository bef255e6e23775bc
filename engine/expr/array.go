package expr

import (
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// arrayElements returns the elements of an array value.
func arrayElements(arr bsoncore.Value) []bsoncore.Value {
	var vals []bsoncore.Value
	it := bsonvalue.ElementsOf(arr.Data)
	for {
		_, v, ok := it.Next()
		if !ok {
			return vals
		}
		vals = append(vals, v)
	}
}

// in is the aggregation $in: whether a value is an element of an array.
func in(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
	if v[1].Type != bsoncore.TypeArray {
		return bsonvalue.Missing, mongoerr.New(40081, "$in requires an array as a second argument, found: %s", bsonvalue.TypeName(v[1].Type))
	}
	for _, elem := range arrayElements(v[1]) {
		if compareExprValues(coll, v[0], elem) == 0 {
			return boolValue(true), nil
		}
	}
	return boolValue(false), nil
}

// size is the aggregation $size: the length of an array.
func size(v []bsoncore.Value) (bsoncore.Value, error) {
	if v[0].Type != bsoncore.TypeArray {
		return bsonvalue.Missing, mongoerr.New(17124, "The argument to $size must be an array, but was of type: %s", bsonvalue.TypeName(v[0].Type))
	}
	return intOrLong(int64(len(arrayElements(v[0])))), nil
}

// arrayElemAt is $arrayElemAt, and $first and $last, which take the array
// alone: the element at an index, negative ones counting from the end, or
// missing past either end.
func arrayElemAt(name string, arr, index bsoncore.Value, alone bool) (bsoncore.Value, error) {
	if isNullish(arr) || isNullish(index) {
		return bsonvalue.Null, nil
	}
	if arr.Type != bsoncore.TypeArray {
		which := "first argument"
		if alone {
			which = "argument"
		}
		return bsonvalue.Missing, mongoerr.New(28689, "%s's %s must be an array, but is %s", name, which, bsonvalue.TypeName(arr.Type))
	}
	if !index.IsNumber() {
		return bsonvalue.Missing, mongoerr.New(28690, "%s's second argument must be a numeric value, but is %s", name, bsonvalue.TypeName(index.Type))
	}
	i, ok := int32Arg(index)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(28691, "%s's second argument must be representable as a 32-bit integer: %s", name, bsonvalue.FormatDouble(toFloat64(index)))
	}
	elems := arrayElements(arr)
	if i < 0 {
		i += len(elems)
	}
	if i < 0 || i >= len(elems) {
		return bsonvalue.Missing, nil
	}
	return elems[i], nil
}

// concatArraysExpr is $concatArrays; a null operand makes the result null.
type concatArraysExpr []exprNode

func (x concatArraysExpr) eval(e *env) (bsoncore.Value, error) {
	size := e.buildingArray("$concatArrays")
	defer size.release()
	idx, out := bsoncore.AppendArrayStart(nil)
	var key []byte
	n := 0
	null, err := operands(e, x, func(v bsoncore.Value) error {
		if v.Type != bsoncore.TypeArray {
			return mongoerr.New(28664, "$concatArrays only supports arrays, not %s", bsonvalue.TypeName(v.Type))
		}
		// Count the elements before copying them.
		if err := size.add(len(v.Data) - 5); err != nil {
			return err
		}
		it := bsonvalue.ElementsOf(v.Data)
		for _, elem, ok := it.Next(); ok; _, elem, ok = it.Next() {
			key = strconv.AppendInt(key[:0], int64(n), 10)
			out = bsoncore.AppendValueElement(out, string(key), elem)
			n++
		}
		return nil
	})
	if err != nil || null {
		return bsonvalue.Null, err
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	// Renumbered keys can be longer than the operands' own.
	if len(out) > MaxValueBytes {
		return bsonvalue.Missing, valueTooLarge("$concatArrays", len(out))
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: out}, nil
}

// slice is the aggregation $slice: [array, n] takes the first n elements,
// or the last -n; [array, position, n] takes n from a position, which
// counts from the end when negative.
func slice(v []bsoncore.Value) (bsoncore.Value, error) {
	arr, first := v[0], v[1]
	switch {
	case isNullish(arr) || isNullish(first):
		return bsonvalue.Null, nil
	case arr.Type != bsoncore.TypeArray:
		return bsonvalue.Missing, mongoerr.New(28724, "First argument to $slice must be an array, but is of type: %s", bsonvalue.TypeName(arr.Type))
	case !first.IsNumber():
		return bsonvalue.Missing, mongoerr.New(28725, "Second argument to $slice must be a numeric value, but is of type: %s", bsonvalue.TypeName(first.Type))
	}
	n, ok := int32Arg(first)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(28726, "Second argument to $slice can't be represented as a 32-bit integer: %s", bsonvalue.FormatDouble(toFloat64(first)))
	}
	elems := arrayElements(arr)
	if len(v) == 2 {
		if n < 0 {
			return arrayValue(elems[max(0, len(elems)+n):]), nil
		}
		return arrayValue(elems[:min(n, len(elems))]), nil
	}
	start := min(n, len(elems))
	if n < 0 {
		start = max(0, len(elems)+n)
	}
	count := v[2]
	switch {
	case isNullish(count):
		return bsonvalue.Null, nil
	case !count.IsNumber():
		return bsonvalue.Missing, mongoerr.New(28727, "Third argument to $slice must be numeric, but is of type: %s", bsonvalue.TypeName(count.Type))
	}
	k, ok := int32Arg(count)
	if !ok {
		return bsonvalue.Missing, mongoerr.New(28728, "Third argument to $slice can't be represented as a 32-bit integer: %s", bsonvalue.FormatDouble(toFloat64(count)))
	}
	if k <= 0 {
		return bsonvalue.Missing, mongoerr.New(28729, "Third argument to $slice must be positive: %d", k)
	}
	return arrayValue(elems[start:min(start+k, len(elems))]), nil
}

// indexOfArray is $indexOfArray: the first index, between the optional
// bounds, of an element equal to the value searched for, or -1.
func indexOfArray(coll *collation.Collator, v []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case isNullish(v[0]):
		return bsonvalue.Null, nil
	case v[0].Type != bsoncore.TypeArray:
		return bsonvalue.Missing, mongoerr.New(40090, "$indexOfArray requires an array as a first argument, found: %s", bsonvalue.TypeName(v[0].Type))
	}
	elems := arrayElements(v[0])
	start, end, err := searchBounds("$indexOfArray", v, len(elems))
	if err != nil {
		return bsonvalue.Missing, err
	}
	for i := start; i < end; i++ {
		if compareExprValues(coll, elems[i], v[1]) == 0 {
			return int32Value(int32(i)), nil
		}
	}
	return int32Value(-1), nil
}

func reverseArray(v []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case isNullish(v[0]):
		return bsonvalue.Null, nil
	case v[0].Type != bsoncore.TypeArray:
		return bsonvalue.Missing, mongoerr.New(34435, "The argument to $reverseArray must be an array, but was of type: %s", bsonvalue.TypeName(v[0].Type))
	}
	elems := arrayElements(v[0])
	slices.Reverse(elems)
	return arrayValue(elems), nil
}

// rangeOf is $range: the int32s from a start up to an end, excluded, by
// a step.
func rangeOf(v []bsoncore.Value) (bsoncore.Value, error) {
	bounds := [3]int{0, 0, 1}
	for i, what := range []string{"starting", "ending", "step"} {
		if i >= len(v) {
			break
		}
		code := mongoerr.Code(34443 + 2*i)
		if !v[i].IsNumber() {
			return bsonvalue.Missing, mongoerr.New(code, "$range requires a numeric %s value, found value of type: %s", what, bsonvalue.TypeName(v[i].Type))
		}
		n, ok := int32Arg(v[i])
		if !ok {
			return bsonvalue.Missing, mongoerr.New(code+1, "$range requires a %s value that can be represented as a 32-bit integer, found value: %s", what, v[i])
		}
		bounds[i] = n
	}
	start, end, step := int64(bounds[0]), int64(bounds[1]), int64(bounds[2])
	if step == 0 {
		return bsonvalue.Missing, mongoerr.New(34449, "$range requires a non-zero step value")
	}
	// MongoDB's own bound, on its estimate of its in-memory array of values
	// of 16 bytes, comes first; then the bound on any value Lethe builds.
	length := int64(0)
	if steps := (end - start) / step; steps >= 0 {
		length = 1 + steps
	}
	const rangeMemoryLimit = 100 << 20
	if need := 24 + length*16; need >= rangeMemoryLimit {
		return bsonvalue.Missing, mongoerr.New(mongoerr.ExceededMemoryLimit, "$range would use too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes", need, rangeMemoryLimit)
	}
	count := int64(0)
	if span := (end - start) * sign(step); span > 0 {
		count = (span + step*sign(step) - 1) / (step * sign(step))
	}
	size := 5
	for i := range int(count) {
		size += 2 + digits(i) + 4
	}
	if size > MaxValueBytes {
		return bsonvalue.Missing, valueTooLarge("$range", size)
	}
	idx, out := bsoncore.AppendArrayStart(make([]byte, 0, size))
	var key []byte
	for i, n := start, 0; step > 0 && i < end || step < 0 && i > end; i, n = i+step, n+1 {
		key = strconv.AppendInt(key[:0], int64(n), 10)
		out = bsoncore.AppendInt32Element(out, string(key), int32(i))
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: out}, nil
}

func sign(i int64) int64 {
	if i < 0 {
		return -1
	}
	return 1
}

// iterationExpr is $map, the values of an expression evaluated with a
// variable bound to each element of an array in turn, or $filter, the
// elements for which it is true.
type iterationExpr struct {
	name   string
	filter bool
	code   mongoerr.Code // of a non-array input
	input  exprNode
	slot   int
	body   exprNode
	limit  exprNode // $filter's, nil when not given
}

// compileIteration makes the compiler of $map or $filter: arguments input,
// the optional as, the body, named bodyName, and for $filter the optional
// limit. codes are MongoDB's for
// an argument that is not an object, an unknown argument, no input, no
// body, and, when evaluated, an input that is not an array.
func compileIteration(bodyName string, filter bool, codes [5]mongoerr.Code) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		if args.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(codes[0], "%s only supports an object as its argument", name)
		}
		names := []string{"input", "as", bodyName}
		if filter {
			names = append(names, "limit")
		}
		vals, err := readArgs(args.Data, names,
			func(arg string) error { return mongoerr.New(codes[1], "Unrecognized parameter to %s: %s", name, arg) })
		switch {
		case err != nil:
			return nil, err
		case vals[0].Type == 0:
			return nil, mongoerr.New(codes[2], "Missing 'input' parameter to %s", name)
		case vals[2].Type == 0:
			return nil, mongoerr.New(codes[3], "Missing '%s' parameter to %s", bodyName, name)
		}
		x := &iterationExpr{name: name, filter: filter, code: codes[4]}
		if x.input, err = c.compile(vals[0]); err != nil {
			return nil, err
		}
		if filter && vals[3].Type != 0 {
			if x.limit, err = c.compile(vals[3]); err != nil {
				return nil, err
			}
		}
		varName := "this"
		if vals[1].Type != 0 {
			varName = stringOf(vals[1])
		}
		if err := checkVariableDefinition(varName); err != nil {
			return nil, err
		}
		var slots []int
		if x.body, slots, err = c.scope([]string{varName}, vals[2]); err != nil {
			return nil, err
		}
		x.slot = slots[0]
		return x, nil
	}
}

func (x *iterationExpr) eval(e *env) (bsoncore.Value, error) {
	in, ok, err := evalTyped(e, x.input, bsoncore.TypeArray, func(v bsoncore.Value) error {
		return mongoerr.New(x.code, "input to %s must be an array not %s", x.name, bsonvalue.TypeName(v.Type))
	})
	if !ok {
		return bsonvalue.Null, err
	}
	limit, err := x.evalLimit(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	out := []bsoncore.Value{}
	size := e.buildingArray(x.name)
	defer size.release()
	it := bsonvalue.ElementsOf(in.Data)
	for _, elem, ok := it.Next(); ok && len(out) != limit; _, elem, ok = it.Next() {
		if err := e.tick(); err != nil {
			return bsonvalue.Missing, err
		}
		e.vars[x.slot] = elem
		r, err := x.body.eval(e)
		if err != nil {
			return bsonvalue.Missing, err
		}
		if x.filter {
			if !bsonvalue.Truthy(r) {
				continue
			}
			r = elem
		}
		if r.Type == 0 {
			r = bsonvalue.Null
		}
		if err := size.addElement(len(out), r); err != nil {
			return bsonvalue.Missing, err
		}
		out = append(out, r)
	}
	return arrayValue(out), nil
}

// evalLimit evaluates $filter's limit: how many elements it keeps, or -1
// for all of them, as when the limit is null.
func (x *iterationExpr) evalLimit(e *env) (int, error) {
	if x.limit == nil {
		return -1, nil
	}
	v, err := x.limit.eval(e)
	if err != nil || isNullish(v) {
		return -1, err
	}
	n, ok := int32Arg(v)
	if !ok {
		return 0, mongoerr.New(327391, "$filter: limit must be represented as a 32-bit integral value: %s", v)
	}
	if n <= 0 {
		return 0, mongoerr.New(327392, "$filter: limit must be greater than 0: %d", n)
	}
	return n, nil
}

// reduceExpr is $reduce: in, evaluated for each element of input with
// $$this bound to the element and $$value to the result so far.
type reduceExpr struct {
	input, initial, in  exprNode
	thisSlot, valueSlot int
}

func compileReduce(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(40075, "$reduce requires an object as an argument, found: %s", bsonvalue.TypeName(args.Type))
	}
	vals, err := readArgs(args.Data, []string{"input", "initialValue", "in"},
		func(name string) error { return mongoerr.New(40076, "$reduce found an unknown argument: %s", name) })
	switch {
	case err != nil:
		return nil, err
	case vals[0].Type == 0:
		return nil, mongoerr.New(40077, "$reduce requires 'input' to be specified")
	case vals[1].Type == 0:
		return nil, mongoerr.New(40078, "$reduce requires 'initialValue' to be specified")
	case vals[2].Type == 0:
		return nil, mongoerr.New(40079, "$reduce requires 'in' to be specified")
	}
	x := &reduceExpr{}
	if x.input, err = c.compile(vals[0]); err != nil {
		return nil, err
	}
	if x.initial, err = c.compile(vals[1]); err != nil {
		return nil, err
	}
	var slots []int
	if x.in, slots, err = c.scope([]string{"this", "value"}, vals[2]); err != nil {
		return nil, err
	}
	x.thisSlot, x.valueSlot = slots[0], slots[1]
	return x, nil
}

func (x *reduceExpr) eval(e *env) (bsoncore.Value, error) {
	in, ok, err := evalTyped(e, x.input, bsoncore.TypeArray, func(v bsoncore.Value) error {
		return mongoerr.New(40080, "$reduce requires that 'input' be an array, found: %s", bsonvalue.TypeName(v.Type))
	})
	if !ok {
		return bsonvalue.Null, err
	}
	acc, err := x.initial.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	// The value so far is held while the next is computed from it.
	held := e.held
	defer func() { e.held = held }()
	it := bsonvalue.ElementsOf(in.Data)
	for _, elem, ok := it.Next(); ok; _, elem, ok = it.Next() {
		if err := e.tick(); err != nil {
			return bsonvalue.Missing, err
		}
		e.held = held
		if err := e.hold(acc); err != nil {
			return bsonvalue.Missing, err
		}
		e.vars[x.thisSlot], e.vars[x.valueSlot] = elem, acc
		if acc, err = x.in.eval(e); err != nil {
			return bsonvalue.Missing, err
		}
	}
	return acc, nil
}

// mergeObjects is $mergeObjects: the fields of its documents, a later
// value replacing an earlier one in place; nulls are skipped.
func mergeObjects(docs []bsoncore.Value) (bsoncore.Value, error) {
	var names []string
	vals := map[string]bsoncore.Value{}
	for _, d := range docs {
		if isNullish(d) {
			continue
		}
		if d.Type != bsoncore.TypeEmbeddedDocument {
			return bsonvalue.Missing, mongoerr.New(40400, "$mergeObjects requires object inputs, but input %s is of type %s", d, bsonvalue.TypeName(d.Type))
		}
		it := bsonvalue.ElementsOf(d.Data)
		for {
			key, v, ok := it.Next()
			if !ok {
				break
			}
			if _, seen := vals[string(key)]; !seen {
				names = append(names, string(key))
			}
			vals[string(key)] = v
		}
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, name := range names {
		out = bsoncore.AppendValueElement(out, name, vals[name])
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}, nil
}
