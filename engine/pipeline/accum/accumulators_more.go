package accum

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

func init() {
	for op, c := range map[string]accCompiler{
		"$mergeObjects": valueAcc(func(string) valueAccumulator { return &mergeAcc{} }),
		"$stdDevPop":    valueAcc(func(string) valueAccumulator { return &stdDevAcc{} }),
		"$stdDevSamp":   valueAcc(func(string) valueAccumulator { return &stdDevAcc{sample: true} }),
		"$median":       compileQuantile,
		"$percentile":   compileQuantile,
		"$firstN":       compileN,
		"$lastN":        compileN,
		"$maxN":         compileN,
		"$minN":         compileN,
		"$top":          compileTopBottom,
		"$bottom":       compileTopBottom,
		"$topN":         compileTopBottom,
		"$bottomN":      compileTopBottom,
		"$accumulator":  refuseAccumulator,
	} {
		accumulators[op] = c
	}
}

func refuseAccumulator(*compiler, string, bson.RawValue) (func() Accumulator, error) {
	return nil, mongoerr.New(mongoerr.NotImplemented, "$accumulator runs server-side JavaScript, which Lethe does not support")
}

// mergeAcc is $mergeObjects: the fields of every document, later values
// replacing earlier ones; null and missing are skipped.
type mergeAcc struct {
	doc []byte
}

func (a *mergeAcc) take(v bsoncore.Value) (int, error) {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return 0, nil
	case bsoncore.TypeEmbeddedDocument:
	default:
		return 0, mongoerr.New(40400, "$mergeObjects requires object inputs, but input %s is of type %s", v, values.TypeName(v))
	}
	old := len(a.doc)
	if a.doc == nil {
		a.doc = append([]byte(nil), v.Data...)
		return len(a.doc), nil
	}
	it := bsonvalue.ElementsOf(v.Data)
	for k, e, ok := it.Next(); ok; k, e, ok = it.Next() {
		a.doc = values.SetPath(a.doc, []string{string(k)}, e)
	}
	if len(a.doc) > values.MaxDocBytes {
		return 0, values.DocTooLarge(len(a.doc), "$mergeObjects")
	}
	return len(a.doc) - old, nil
}

func (a *mergeAcc) Result() bsoncore.Value {
	if a.doc == nil {
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: values.EmptyDoc}
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: a.doc}
}

func (a *mergeAcc) Size() int { return max(len(a.doc), 5) }

// stdDevAcc is $stdDevPop, or $stdDevSamp: the standard deviation of the
// numbers, by Welford's method; other values are skipped.
type stdDevAcc struct {
	sample bool
	n      int64
	mean   float64
	m2     float64
}

func (a *stdDevAcc) take(v bsoncore.Value) (int, error) {
	if !values.IsNumeric(v) {
		return 0, nil
	}
	x := values.ToFloat(v)
	a.n++
	d := x - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (x - a.mean)
	return 0, nil
}

func (a *stdDevAcc) Result() bsoncore.Value {
	n := a.n
	if a.sample {
		n--
	}
	if n <= 0 {
		return values.Null
	}
	return values.Double(math.Sqrt(a.m2 / float64(n)))
}

func (a *stdDevAcc) Size() int { return 16 }
func (*stdDevAcc) borrows()    {}

// quantileAcc is $median or $percentile: the nearest-rank percentiles of
// the numbers, other values skipped. MongoDB 7's 'approximate' method
// gives these exact values for the sizes its documentation shows; Lethe
// computes them exactly at any size.
type quantileAcc struct {
	ps     []float64 // nil for $median
	values []float64
}

func compileQuantile(c *compiler, op string, arg bson.RawValue) (func() Accumulator, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		code := mongoerr.Code(7436100)
		if op == "$percentile" {
			code = 7429703
		}
		return nil, mongoerr.New(code, "specification must be an object; found %s", arg)
	}
	var input, p, method bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "input":
			input = el.Value()
		case k == "method":
			method = el.Value()
		case k == "p" && op == "$percentile":
			p = el.Value()
		default:
			return nil, mongoerr.New(40415, "BSON field '%s.%s' is an unknown field.", op[1:], k)
		}
	}
	switch {
	case input.Type == 0:
		return nil, mongoerr.New(40414, "BSON field '%s.input' is missing but a required field", op[1:])
	case op == "$percentile" && p.Type == 0:
		return nil, mongoerr.New(40414, "BSON field '%s.p' is missing but a required field", op[1:])
	case method.Type == 0:
		return nil, mongoerr.New(40414, "BSON field '%s.method' is missing but a required field", op[1:])
	case method.Type != bson.TypeString:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.method' is the wrong type '%s', expected type 'string'", op[1:], values.TypeName(bsoncore.Value{Type: bsoncore.Type(method.Type)}))
	case method.StringValue() != "approximate":
		return nil, mongoerr.New(mongoerr.BadValue, "Currently only 'approximate' can be used as percentile 'method'.")
	}
	var ps []float64
	if op == "$percentile" {
		var err error
		if ps, err = c.percentiles(p); err != nil {
			return nil, err
		}
	}
	ex, err := c.expr(input)
	if err != nil {
		return nil, err
	}
	return func() Accumulator { return &exprAcc{arg: ex, valueAccumulator: &quantileAcc{ps: ps}} }, nil
}

// percentiles reads the p of $percentile: constant numbers from 0 to 1.
func (c *compiler) percentiles(p bson.RawValue) ([]float64, error) {
	ex, err := c.expr(p)
	if err != nil {
		return nil, err
	}
	if readsDocument(p) {
		return nil, mongoerr.New(7750300, "The $percentile 'p' field must be an array of constant values, but found value: %s.", p)
	}
	v, err := ex.Eval(bson.Raw(values.EmptyDoc))
	if err != nil {
		return nil, err
	}
	const msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: %s"
	if v.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(7750301, msg, v)
	}
	var ps []float64
	it := bsonvalue.ElementsOf(v.Data)
	for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
		if !values.IsNumeric(e) {
			return nil, mongoerr.New(7750302, msg, e)
		}
		f := values.ToFloat(e)
		if !(f >= 0 && f <= 1) {
			return nil, mongoerr.New(7750303, msg, e)
		}
		ps = append(ps, f)
	}
	if len(ps) == 0 {
		return nil, mongoerr.New(7750301, msg, v)
	}
	return ps, nil
}

// readsDocument reports whether an expression reads a field path.
func readsDocument(v bson.RawValue) bool {
	switch v.Type {
	case bson.TypeString:
		s := v.StringValue()
		return len(s) > 1 && s[0] == '$' && (s[1] != '$' || len(s) > 6 && (s[2:6] == "ROOT" || s[2:6] == "CURR"))
	case bson.TypeArray, bson.TypeEmbeddedDocument:
		vals, _ := bson.Raw(v.Value).Values()
		for _, e := range vals {
			if readsDocument(e) {
				return true
			}
		}
	}
	return false
}

func (*quantileAcc) borrows() {}

func (a *quantileAcc) take(v bsoncore.Value) (int, error) {
	if !values.IsNumeric(v) {
		return 0, nil
	}
	f := values.ToFloat(v)
	if math.IsNaN(f) {
		return 0, nil
	}
	a.values = append(a.values, f)
	return 8, nil
}

func (a *quantileAcc) Result() bsoncore.Value {
	slices.Sort(a.values)
	at := func(p float64) bsoncore.Value {
		n := len(a.values)
		if n == 0 {
			return values.Null
		}
		i := int(math.Max(0, math.Ceil(p*float64(n))-1))
		return values.Double(a.values[min(i, n-1)])
	}
	if a.ps == nil {
		return at(0.5)
	}
	out := make([]bsoncore.Value, len(a.ps))
	for i, p := range a.ps {
		out[i] = at(p)
	}
	return values.ArrayOf(out)
}

func (a *quantileAcc) Size() int {
	if a.ps == nil {
		return 16
	}
	return 5 + len(a.ps)*13
}
