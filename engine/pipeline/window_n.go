package pipeline

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/query"
)

// The accumulators that keep n values: $firstN, $lastN, $minN, $maxN,
// $topN, $bottomN, and $top and $bottom, which keep one. They are window
// functions here until $group has them: windowAccumulator takes $group's
// from its table first, and these go then.

func init() {
	for op, compile := range map[string]accCompiler{
		"$firstN": compileNAcc, "$lastN": compileNAcc, "$minN": compileNAcc, "$maxN": compileNAcc,
		"$topN": compileTopBottom, "$bottomN": compileTopBottom, "$top": compileTopBottom, "$bottom": compileTopBottom,
	} {
		windowOnlyAccumulators[op] = compile
	}
}

// compileNAcc compiles {input: <expr>, n: <expr>} of $firstN, $lastN,
// $minN or $maxN.
func compileNAcc(c *compiler, op string, arg bson.RawValue) (func() accumulator, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		code := mongoerr.Code(5787900)
		if op == "$firstN" || op == "$lastN" {
			code = 5787801
		}
		return nil, mongoerr.New(code, "specification must be an object; found %s", arg)
	}
	var input *expr.Expr
	var nArg bson.RawValue
	hasN := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "input":
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			input = ex
		case "n":
			nArg, hasN = el.Value(), true
		default:
			return nil, mongoerr.New(mongoerr.Code(5787901), "Unknown argument for 'n' operator: %s", el.Key())
		}
	}
	if !hasN {
		return nil, mongoerr.New(mongoerr.Code(5787906), "Missing value for 'n'")
	}
	if input == nil {
		return nil, mongoerr.New(mongoerr.Code(5787907), "Missing value for 'input'")
	}
	n, err := c.accumulatorN(nArg)
	if err != nil {
		return nil, err
	}
	return func() accumulator { return &nAcc{op: op, n: n, input: input} }, nil
}

// accumulatorN evaluates n, which a window function has no document to
// take from, and checks it is a positive whole number.
func (c *compiler) accumulatorN(v bson.RawValue) (int, error) {
	nv, err := c.constant(v)
	if err != nil {
		return 0, err
	}
	f, ok := numberAsFloat(nv)
	if !ok {
		return 0, mongoerr.New(mongoerr.Code(5787902), "Value for 'n' must be of integral type, but found %s", bsonvalue.TypeName(orNull(nv).Type))
	}
	n, ok := bsonvalue.IntegerValue(nv)
	if !ok {
		return 0, mongoerr.New(mongoerr.Code(5787903), "Value for 'n' must be of integral type, but found %v", f)
	}
	if n <= 0 {
		return 0, mongoerr.New(mongoerr.Code(5787908), "'n' must be greater than 0, found %d", n)
	}
	return int(n), nil
}

// nAcc is $firstN or $lastN, which keep missing values as null, or $minN
// or $maxN, which leave null and missing out and give their values from
// the least or the greatest.
type nAcc struct {
	op     string
	n      int
	input  *expr.Expr
	values []bsoncore.Value
}

func (a *nAcc) add(ctx context.Context, doc bson.Raw) (int, error) {
	v, err := a.input.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	v = own(v, doc)
	switch a.op {
	case "$firstN":
		if len(a.values) == a.n {
			return 0, nil
		}
		a.values = append(a.values, orNull(v))
	case "$lastN":
		a.values = append(a.values, orNull(v))
		if len(a.values) > a.n {
			a.values = a.values[1:]
		}
	default:
		if nullish(v) {
			return 0, nil
		}
		desc := a.op == "$maxN"
		i, _ := slices.BinarySearchFunc(a.values, v, func(e, t bsoncore.Value) int {
			if c := keycodec.Compare(e, t); desc {
				return -c
			} else {
				return c
			}
		})
		a.values = slices.Insert(a.values, i, v)
		if len(a.values) > a.n {
			a.values = a.values[:a.n]
		}
	}
	return len(v.Data), nil
}

func (a *nAcc) result() bsoncore.Value { return arrayOf(a.values) }
func (a *nAcc) size() int              { return arraySize(a.values) }

// compileTopBottom compiles {n: <expr>, sortBy: {...}, output: <expr>} of
// $topN or $bottomN, or the same without n of $top or $bottom.
func compileTopBottom(c *compiler, op string, arg bson.RawValue) (func() accumulator, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(5788001), "specification must be an object; found %s", arg)
	}
	single := op == "$top" || op == "$bottom"
	var output *expr.Expr
	var sortBy *query.Sort
	var nArg bson.RawValue
	hasN := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch key := el.Key(); {
		case key == "n" && !single:
			nArg, hasN = el.Value(), true
		case key == "output":
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			output = ex
		case key == "sortBy":
			d, ok := el.Value().DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "the sortBy of %s must be an object", op)
			}
			s, err := query.CompileSort(d)
			if err != nil {
				return nil, err
			}
			sortBy = s
		default:
			return nil, mongoerr.New(mongoerr.Code(5788002), "Unknown argument to %s '%s'", op, key)
		}
	}
	n := 1
	if !single {
		if !hasN {
			return nil, mongoerr.New(mongoerr.Code(5788003), "Missing value for 'n'")
		}
		var err error
		if n, err = c.accumulatorN(nArg); err != nil {
			return nil, err
		}
	}
	if output == nil {
		return nil, mongoerr.New(mongoerr.Code(5788004), "Missing value for 'output'")
	}
	if sortBy == nil {
		return nil, mongoerr.New(mongoerr.Code(5788005), "Missing value for 'sortBy'")
	}
	bottom := op == "$bottom" || op == "$bottomN"
	return func() accumulator {
		return &topBottomAcc{n: n, single: single, bottom: bottom, output: output, sort: sortBy}
	}, nil
}

// topBottomAcc is $topN, $bottomN, $top or $bottom: the outputs of the
// first or last n documents in the order of sortBy, missing as null.
type topBottomAcc struct {
	n              int
	single, bottom bool
	output         *expr.Expr
	sort           *query.Sort
	kept           []ranked // in sortBy order
}

// ranked is a document kept for its place in the order, and its output.
type ranked struct {
	doc bson.Raw
	out bsoncore.Value
}

func (a *topBottomAcc) add(ctx context.Context, doc bson.Raw) (int, error) {
	v, err := a.output.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	r := ranked{doc: doc, out: orNull(own(v, doc))}
	// Among documents that sort alike, the earlier stays ahead.
	i, _ := slices.BinarySearchFunc(a.kept, r, func(e, t ranked) int {
		if c := a.sort.Compare(e.doc, t.doc); c != 0 {
			return c
		}
		return -1
	})
	a.kept = slices.Insert(a.kept, i, r)
	if len(a.kept) > a.n {
		if a.bottom {
			a.kept = a.kept[1:]
		} else {
			a.kept = a.kept[:a.n]
		}
	}
	return len(r.out.Data), nil
}

func (a *topBottomAcc) result() bsoncore.Value {
	if a.single {
		if len(a.kept) == 0 {
			return nullValue
		}
		return a.kept[0].out
	}
	outs := make([]bsoncore.Value, len(a.kept))
	for i, r := range a.kept {
		outs[i] = r.out
	}
	return arrayOf(outs)
}

func (a *topBottomAcc) size() int { return 16 + 32*len(a.kept) }
