package accum

import (
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// starter is an accumulator set up with its group's _id before its first
// document: n, an expression, is evaluated against {_id: <group key>}. A
// window function has no group key: it passes a missing id, and n is
// evaluated against an empty document.
type starter interface {
	start(ctx context.Context, id bsoncore.Value) error
}

// nArg is the n of the accumulators that keep n values.
type nArg struct {
	ex *expr.Expr
	n  int64
}

func (a *nArg) start(ctx context.Context, id bsoncore.Value) error {
	doc := values.EmptyDoc
	if id.Type != 0 {
		doc = bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
	}
	v, err := a.ex.EvalContext(ctx, bson.Raw(doc))
	if err != nil {
		return err
	}
	if !values.IsNumeric(v) {
		return mongoerr.New(5787902, "Value for 'n' must be of integral type, but found %s", describeValue(v))
	}
	f := values.ToFloat(v)
	n := int64(f)
	if float64(n) != f {
		return mongoerr.New(5787903, "Value for 'n' must be of integral type, but found %s", describeValue(v))
	}
	if n <= 0 {
		return mongoerr.New(5787908, "'n' must be greater than 0, found %d", n)
	}
	a.n = n
	return nil
}

func describeValue(v bsoncore.Value) string {
	if v.Type == 0 {
		return "missing"
	}
	return v.String()
}

// compileN compiles $firstN, $lastN, $maxN and $minN: {input, n}.
func compileN(c *compiler, op string, arg bson.RawValue) (func() Accumulator, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		code := mongoerr.Code(5787801)
		if op == "$maxN" || op == "$minN" {
			code = 5787900
		}
		return nil, mongoerr.New(code, "specification must be an object; found %s", arg)
	}
	var input, n bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "input":
			input = el.Value()
		case "n":
			n = el.Value()
		default:
			return nil, mongoerr.New(5787901, "Unknown argument for 'n' operator: %s", el.Key())
		}
	}
	if n.Type == 0 {
		return nil, mongoerr.New(5787906, "Missing value for 'n'")
	}
	if input.Type == 0 {
		return nil, mongoerr.New(5787907, "Missing value for 'input'")
	}
	nex, err := c.expr(n)
	if err != nil {
		return nil, err
	}
	in, err := c.expr(input)
	if err != nil {
		return nil, err
	}
	return func() Accumulator {
		return &exprAcc{arg: in, valueAccumulator: &nAcc{op: op, nArg: nArg{ex: nex}, coll: in.Collator()}}
	}, nil
}

// nAcc keeps n values: the first, the last, the greatest or the least.
type nAcc struct {
	op string
	nArg
	values []bsoncore.Value
	bytes  int
	// coll is the collation $maxN and $minN compare strings under, as
	// MongoDB's AccumulatorMinMaxN orders its values with the
	// ExpressionContext's ValueComparator.
	coll *collation.Collator
}

func (a *nAcc) take(v bsoncore.Value) (int, error) {
	switch a.op {
	case "$firstN", "$lastN":
		if v.Type == 0 {
			v = values.Null
		}
		if int64(len(a.values)) == a.n {
			if a.op == "$firstN" {
				return 0, nil
			}
			a.bytes -= len(a.values[0].Data)
			a.values = a.values[1:]
		}
		a.values = append(a.values, v)
	default:
		if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			return 0, nil
		}
		// Keep values in the order of the result: least first for $minN,
		// greatest first for $maxN. MongoDB keeps them in one ascending
		// multiset, equal values in the order they came, and reads it
		// backwards for $maxN: there a later value comes before the equal
		// ones already kept. A value no better than the worst kept one
		// does not get in.
		sense := 1
		if a.op == "$maxN" {
			sense = -1
		}
		if int64(len(a.values)) == a.n && a.coll.Compare(v, a.values[len(a.values)-1])*sense >= 0 {
			return 0, nil
		}
		i, _ := slices.BinarySearchFunc(a.values, v, func(x, v bsoncore.Value) int {
			if c := a.coll.Compare(x, v) * sense; c != 0 {
				return c
			}
			return -sense // after equal values for $minN, before them for $maxN
		})
		a.values = slices.Insert(a.values, i, v)
		if int64(len(a.values)) > a.n {
			a.bytes -= len(a.values[a.n].Data)
			a.values = a.values[:a.n]
		}
	}
	a.bytes += len(v.Data)
	if a.bytes > maxAccumulatorBytes {
		return 0, accumulatorExceeded(a.op)
	}
	return len(v.Data), nil
}

func (a *nAcc) Result() bsoncore.Value { return values.ArrayOf(a.values) }
func (a *nAcc) Size() int              { return values.ArraySize(a.values) }

// compileTopBottom compiles $top, $bottom ({sortBy, output}), $topN and
// $bottomN ({n, sortBy, output}).
func compileTopBottom(c *compiler, op string, arg bson.RawValue) (func() Accumulator, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(5788001, "specification must be an object; found %s", arg)
	}
	single := op == "$top" || op == "$bottom"
	var n, output, sortBy bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "n" && !single:
			n = el.Value()
		case k == "output":
			output = el.Value()
		case k == "sortBy":
			sortBy = el.Value()
		default:
			return nil, mongoerr.New(5788002, "Unknown argument to %s '%s'", op, k)
		}
	}
	switch {
	case !single && n.Type == 0:
		return nil, mongoerr.New(5788003, "Missing value for 'n'")
	case output.Type == 0:
		return nil, mongoerr.New(5788004, "Missing value for 'output'")
	case sortBy.Type == 0:
		return nil, mongoerr.New(5788005, "Missing value for 'sortBy'")
	case sortBy.Type != bson.TypeEmbeddedDocument:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "%s sortBy must be an object, found %s", op, sortBy)
	}
	// The sort keys are the values of the sortBy paths, in a document of
	// their own whose fields k0, k1... sort as the paths do.
	fields, _ := sortBy.Document().Elements()
	if _, err := query.CompileSort(sortBy.Document()); err != nil {
		return nil, err
	}
	keys := bsoncore.NewDocumentBuilder()
	pattern := bsoncore.NewDocumentBuilder()
	for i, f := range fields {
		k := fmt.Sprintf("k%d", i)
		keys.AppendString(k, "$"+f.Key())
		v := f.Value()
		pattern.AppendValue(k, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
	}
	srt, err := query.CompileSort(bson.Raw(pattern.Build()))
	if err != nil {
		return nil, err
	}
	keyEx, err := c.expr(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: keys.Build()})
	if err != nil {
		return nil, err
	}
	outEx, err := c.expr(output)
	if err != nil {
		return nil, err
	}
	var nex *expr.Expr
	if !single {
		if nex, err = c.expr(n); err != nil {
			return nil, err
		}
	}
	bottom := op == "$bottom" || op == "$bottomN"
	return func() Accumulator {
		a := &topAcc{op: op, single: single, bottom: bottom, sort: srt, keys: keyEx, out: outEx}
		a.nArg = nArg{ex: nex, n: 1}
		return a
	}, nil
}

// topAcc is $top, $bottom, $topN or $bottomN: the outputs of the first
// or last n documents in an order; ties keep the document seen first.
type topAcc struct {
	op     string
	single bool
	bottom bool
	sort   *query.Sort
	keys   *expr.Expr
	out    *expr.Expr
	nArg
	entries []topEntry // in sort order
	bytes   int
}

type topEntry struct {
	key bson.Raw
	out bsoncore.Value
}

func (a *topAcc) start(ctx context.Context, id bsoncore.Value) error {
	if a.single {
		return nil
	}
	return a.nArg.start(ctx, id)
}

func (a *topAcc) Add(ctx context.Context, doc bson.Raw) (int, error) {
	kv, err := a.keys.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	// The sort keys compare under the collation, as MongoDB's
	// AccumulatorTopBottomN makes them with the ExpressionContext's
	// collator: keeping their collation keys compares them so with one
	// key computed for each document.
	kv = a.keys.Collator().Key(kv)
	key := bson.Raw(append([]byte(nil), kv.Data...))
	cmp := func(e topEntry) int { return a.sort.Compare(e.key, key) }
	if int64(len(a.entries)) == a.n {
		// Full: only a document strictly better than the worst kept one
		// gets in.
		if a.bottom && cmp(a.entries[0]) >= 0 || !a.bottom && cmp(a.entries[len(a.entries)-1]) <= 0 {
			return 0, nil
		}
	}
	out, err := a.out.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	if out.Type == 0 {
		out = values.Null
	}
	out = bsoncore.Value{Type: out.Type, Data: append([]byte(nil), out.Data...)}
	i, _ := slices.BinarySearchFunc(a.entries, key, func(e topEntry, _ bson.Raw) int {
		if c := cmp(e); c != 0 {
			return c
		}
		return -1 // after equal keys
	})
	a.entries = slices.Insert(a.entries, i, topEntry{key: key, out: out})
	grew := len(key) + len(out.Data)
	if int64(len(a.entries)) > a.n {
		drop := len(a.entries) - 1
		if a.bottom {
			drop = 0
		}
		grew -= len(a.entries[drop].key) + len(a.entries[drop].out.Data)
		a.entries = slices.Delete(a.entries, drop, drop+1)
	}
	if a.bytes += grew; a.bytes > maxAccumulatorBytes {
		return 0, accumulatorExceeded(a.op)
	}
	return grew, nil
}

func (a *topAcc) values() []bsoncore.Value {
	vals := make([]bsoncore.Value, len(a.entries))
	for i, e := range a.entries {
		vals[i] = e.out
	}
	return vals
}

func (a *topAcc) Result() bsoncore.Value {
	if a.single {
		if len(a.entries) == 0 {
			return values.Null
		}
		return a.entries[0].out
	}
	return values.ArrayOf(a.values())
}

func (a *topAcc) Size() int { return values.ArraySize(a.values()) }
