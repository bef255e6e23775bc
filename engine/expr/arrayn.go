package expr

import (
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// Array operators that reshape arrays and documents: $zip, $sortArray,
// $arrayToObject and $objectToArray.

func arrayShapeOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$zip":           compileZip,
		"$sortArray":     compileSortArray,
		"$arrayToObject": fixed(1, arrayToObject),
		"$objectToArray": fixed(1, objectToArray),
	}
}

// zipExpr is $zip: the arrays of the i-th elements of its inputs.
type zipExpr struct {
	inputs, defaults []exprNode
	longest          bool
}

func compileZip(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(34460, "$zip only supports an object as an argument, found %s", bsonvalue.TypeName(args.Type))
	}
	x := &zipExpr{}
	it := bsonvalue.ElementsOf(args.Data)
	for key, v, ok := it.Next(); ok; key, v, ok = it.Next() {
		var err error
		switch string(key) {
		case "inputs":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(34461, "inputs must be an array of expressions, found %s", bsonvalue.TypeName(v.Type))
			}
			x.inputs, err = c.compileList(v.Data)
		case "defaults":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(34462, "defaults must be an array of expressions, found %s", bsonvalue.TypeName(v.Type))
			}
			x.defaults, err = c.compileList(v.Data)
		case "useLongestLength":
			if v.Type != bsoncore.TypeBoolean {
				return nil, mongoerr.New(34463, "useLongestLength must be a bool, found %s", bsonvalue.TypeName(v.Type))
			}
			x.longest = v.Boolean()
		default:
			return nil, mongoerr.New(34464, "$zip found an unknown argument: %s", key)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case len(x.inputs) == 0:
		return nil, mongoerr.New(34465, "$zip requires at least one input array")
	case !x.longest && len(x.defaults) > 0:
		return nil, mongoerr.New(34466, "cannot specify defaults unless useLongestLength is true")
	case len(x.defaults) > 0 && len(x.defaults) != len(x.inputs):
		return nil, mongoerr.New(34467, "defaults and inputs must have the same length")
	}
	return x, nil
}

func (x *zipExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	inputs := make([][]bsoncore.Value, len(x.inputs))
	shortest, longest := 0, 0
	for i, n := range x.inputs {
		v, err := n.eval(e)
		if err == nil {
			err = e.hold(v)
		}
		switch {
		case err != nil:
			return bsonvalue.Missing, err
		case isNullish(v):
			return bsonvalue.Null, nil
		case v.Type != bsoncore.TypeArray:
			return bsonvalue.Missing, mongoerr.New(34468, "$zip found a non-array expression in input: %s", v)
		}
		inputs[i] = arrayElements(v)
		if i == 0 || len(inputs[i]) < shortest {
			shortest = len(inputs[i])
		}
		longest = max(longest, len(inputs[i]))
	}
	defaults := make([]bsoncore.Value, len(x.inputs))
	for i := range defaults {
		defaults[i] = bsonvalue.Null
	}
	if shortest != longest {
		for i, n := range x.defaults {
			v, err := n.eval(e)
			if err == nil {
				err = e.hold(v)
			}
			if err != nil {
				return bsonvalue.Missing, err
			}
			if v.Type != 0 {
				defaults[i] = v
			}
		}
	}
	rows := shortest
	if x.longest {
		rows = longest
	}
	size := e.buildingArray("$zip")
	defer size.release()
	out := make([]bsoncore.Value, 0, rows)
	row := make([]bsoncore.Value, len(inputs))
	for r := range rows {
		if err := e.tick(); err != nil {
			return bsonvalue.Missing, err
		}
		rowSize := 5
		for i, in := range inputs {
			row[i] = defaults[i]
			if r < len(in) {
				row[i] = in[r]
			}
			rowSize += 2 + digits(i) + len(row[i].Data)
		}
		// Count the row before building it: defaults repeat.
		if err := size.add(2 + digits(r) + rowSize); err != nil {
			return bsonvalue.Missing, err
		}
		out = append(out, arrayValue(row))
	}
	return arrayValue(out), nil
}

// sortArrayExpr is $sortArray: an array sorted by its elements, or by
// fields of its documents.
type sortArrayExpr struct {
	input  exprNode
	fields []string // nil when sorting by the whole element
	dirs   []int
}

func compileSortArray(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(2942500, "$sortArray requires an object as an argument, found: %s", bsonvalue.TypeName(args.Type))
	}
	x := &sortArrayExpr{}
	var haveSort bool
	it := bsonvalue.ElementsOf(args.Data)
	for key, v, ok := it.Next(); ok; key, v, ok = it.Next() {
		switch string(key) {
		case "input":
			n, err := c.compile(v)
			if err != nil {
				return nil, err
			}
			x.input = n
		case "sortBy":
			if err := x.readSortBy(v); err != nil {
				return nil, err
			}
			haveSort = true
		default:
			return nil, mongoerr.New(2942501, "$sortArray found an unknown argument: %s", key)
		}
	}
	switch {
	case x.input == nil:
		return nil, mongoerr.New(2942502, "$sortArray requires 'input' to be specified")
	case !haveSort:
		return nil, mongoerr.New(2942503, "$sortArray requires 'sortBy' to be specified")
	}
	return x, nil
}

// readSortBy reads 1 or -1, sorting whole elements, or a sort pattern of
// fields.
func (x *sortArrayExpr) readSortBy(v bsoncore.Value) error {
	direction := func(v bsoncore.Value) (int, bool) {
		if !v.IsNumber() {
			return 0, false
		}
		switch toFloat64(v) {
		case 1:
			return 1, true
		case -1:
			return -1, true
		}
		return 0, false
	}
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument:
		it := bsonvalue.ElementsOf(v.Data)
		for key, dir, ok := it.Next(); ok; key, dir, ok = it.Next() {
			d, valid := direction(dir)
			if !valid {
				return mongoerr.New(2942505, "The sort element value must be either 1 or -1")
			}
			if slices.Contains(strings.Split(string(key), "."), "") {
				return mongoerr.New(2942505, "The sort field cannot be empty or have an empty part: %q", key)
			}
			x.fields = append(x.fields, string(key))
			x.dirs = append(x.dirs, d)
		}
		if len(x.fields) == 0 {
			return mongoerr.New(2942505, "The sort pattern is empty when it should be a set of fields.")
		}
		return nil
	case v.IsNumber():
		d, valid := direction(v)
		if !valid {
			return mongoerr.New(2942506, "The $sort element value must be either 1 or -1")
		}
		x.dirs = []int{d}
		return nil
	}
	return mongoerr.New(2942507, "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
}

func (x *sortArrayExpr) eval(e *env) (bsoncore.Value, error) {
	in, ok, err := evalTyped(e, x.input, bsoncore.TypeArray, func(v bsoncore.Value) error {
		return mongoerr.New(2942504, "The input argument to $sortArray must be an array, but was of type: %s", bsonvalue.TypeName(v.Type))
	})
	if !ok {
		return bsonvalue.Null, err
	}
	elems := arrayElements(in)
	if x.fields == nil {
		slices.SortStableFunc(elems, func(a, b bsoncore.Value) int { return x.dirs[0] * compareExprValues(e.coll, a, b) })
		return arrayValue(elems), nil
	}
	// Sort keys are the fields' values, missing ones and those of elements
	// that are not documents ranking as null.
	keys := make([][]bsoncore.Value, len(elems))
	order := make([]int, len(elems))
	for i, elem := range elems {
		order[i] = i
		keys[i] = make([]bsoncore.Value, len(x.fields))
		for f, path := range x.fields {
			keys[i][f] = bsonvalue.Null
			if elem.Type == bsoncore.TypeEmbeddedDocument {
				if v := dottedField(elem, path); v.Type != 0 {
					keys[i][f] = v
				}
			}
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		for f, dir := range x.dirs {
			if r := compareExprValues(e.coll, keys[a][f], keys[b][f]); r != 0 {
				return dir * r
			}
		}
		return 0
	})
	sorted := make([]bsoncore.Value, len(elems))
	for i, j := range order {
		sorted[i] = elems[j]
	}
	return arrayValue(sorted), nil
}

// dottedField finds a dotted path in a document as a sort pattern does:
// each component names a field, or an element of an array by its index;
// arrays are not searched.
func dottedField(v bsoncore.Value, path string) bsoncore.Value {
	for _, part := range strings.Split(path, ".") {
		if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
			return bsonvalue.Missing
		}
		next, ok := bsonvalue.Lookup(v.Data, part)
		if !ok {
			return bsonvalue.Missing
		}
		v = next
	}
	return v
}

// arrayToObject is $arrayToObject: a document of the key-value pairs of an
// array, given as [key, value] arrays or {k, v} documents, all of one kind.
// A repeated key takes the later value in the earlier place.
func arrayToObject(v []bsoncore.Value) (bsoncore.Value, error) {
	in := v[0]
	switch {
	case isNullish(in):
		return bsonvalue.Null, nil
	case in.Type != bsoncore.TypeArray:
		return bsonvalue.Missing, mongoerr.New(40386, "$arrayToObject requires an array input, found: %s", bsonvalue.TypeName(in.Type))
	}
	elems := arrayElements(in)
	var names []string
	vals := map[string]bsoncore.Value{}
	for i, elem := range elems {
		pairs := elem.Type == bsoncore.TypeArray
		if i == 0 && !pairs && elem.Type != bsoncore.TypeEmbeddedDocument {
			return bsonvalue.Missing, mongoerr.New(40398, "Unrecognised input type format for $arrayToObject: %s", bsonvalue.TypeName(elem.Type))
		}
		firstPairs := elems[0].Type == bsoncore.TypeArray
		var key string
		var val bsoncore.Value
		if firstPairs {
			if !pairs {
				return bsonvalue.Missing, mongoerr.New(40396, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Array was detected, now found: %s", bsonvalue.TypeName(elem.Type))
			}
			pair := arrayElements(elem)
			if len(pair) != 2 {
				return bsonvalue.Missing, mongoerr.New(40397, "$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(pair))
			}
			if pair[0].Type != bsoncore.TypeString {
				return bsonvalue.Missing, mongoerr.New(40395, "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: %s", bsonvalue.TypeName(pair[0].Type))
			}
			key, val = stringOf(pair[0]), pair[1]
			if strings.ContainsRune(key, 0) {
				return bsonvalue.Missing, mongoerr.New(4940400, "Key field cannot contain an embedded null byte")
			}
		} else {
			if elem.Type != bsoncore.TypeEmbeddedDocument {
				return bsonvalue.Missing, mongoerr.New(40391, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Object was detected, now found: %s", bsonvalue.TypeName(elem.Type))
			}
			if n := countFields(elem.Data); n != 2 {
				return bsonvalue.Missing, mongoerr.New(40392, "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", n)
			}
			k, hasK := bsonvalue.Lookup(elem.Data, "k")
			v, hasV := bsonvalue.Lookup(elem.Data, "v")
			if !hasK || !hasV {
				return bsonvalue.Missing, mongoerr.New(40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: %s", bsoncore.Document(elem.Data))
			}
			if k.Type != bsoncore.TypeString {
				return bsonvalue.Missing, mongoerr.New(40394, "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: %s", bsonvalue.TypeName(k.Type))
			}
			key, val = stringOf(k), v
			if strings.ContainsRune(key, 0) {
				return bsonvalue.Missing, mongoerr.New(4940401, "Key field cannot contain an embedded null byte")
			}
		}
		if _, seen := vals[key]; !seen {
			names = append(names, key)
		}
		vals[key] = val
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, name := range names {
		out = bsoncore.AppendValueElement(out, name, vals[name])
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}, nil
}

// objectToArray is $objectToArray: the fields of a document as {k, v}
// documents.
func objectToArray(v []bsoncore.Value) (bsoncore.Value, error) {
	in := v[0]
	switch {
	case isNullish(in):
		return bsonvalue.Null, nil
	case in.Type != bsoncore.TypeEmbeddedDocument:
		return bsonvalue.Missing, mongoerr.New(40390, "$objectToArray requires a document input, found: %s", bsonvalue.TypeName(in.Type))
	}
	idx, out := bsoncore.AppendArrayStart(nil)
	it := bsonvalue.ElementsOf(in.Data)
	var key []byte
	n := 0
	for name, val, ok := it.Next(); ok; name, val, ok = it.Next() {
		key = strconv.AppendInt(key[:0], int64(n), 10)
		var pair int32
		pair, out = bsoncore.AppendDocumentElementStart(out, string(key))
		out = bsoncore.AppendStringElement(out, "k", string(name))
		out = bsoncore.AppendValueElement(out, "v", val)
		out, _ = bsoncore.AppendDocumentEnd(out, pair)
		n++
		if len(out) > MaxValueBytes {
			return bsonvalue.Missing, valueTooLarge("$objectToArray", len(out))
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: out}, nil
}
