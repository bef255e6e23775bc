package expr

import (
	"container/heap"
	"math"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// The expression forms of accumulators, which apply one to the elements
// of an array: $firstN, $lastN, $maxN, $minN, $median, $percentile,
// $stdDevPop and $stdDevSamp.

// MongoDB's codes for the n-element accumulators and the quantiles. The
// quantiles' arguments are parsed by MongoDB's IDL, whose codes for a
// missing and an unknown field are 40414 and 40415.
const (
	codeFirstLastNSpec  mongoerr.Code = 5787801
	codeMinMaxNSpec     mongoerr.Code = 5787900
	codeNUnknownArg     mongoerr.Code = 5787901
	codeNNotNumeric     mongoerr.Code = 5787902
	codeNNotIntegral    mongoerr.Code = 5787903
	codeNMissing        mongoerr.Code = 5787906
	codeNInputMissing   mongoerr.Code = 5787907
	codeNNotPositive    mongoerr.Code = 5787908
	codeNInputNotArray  mongoerr.Code = 5788200
	codePercentileSpec  mongoerr.Code = 7436200
	codeMedianSpec      mongoerr.Code = 7436201
	codePNotConstant    mongoerr.Code = 7750300
	codePNotArray       mongoerr.Code = 7750301
	codePNotNumeric     mongoerr.Code = 7750302
	codePOutOfRange     mongoerr.Code = 7750303
	codeIDLMissingField mongoerr.Code = 40414
	codeIDLUnknownField mongoerr.Code = 40415
)

func accumulatorExprOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$firstN":     compileN(codeFirstLastNSpec, firstN),
		"$lastN":      compileN(codeFirstLastNSpec, lastN),
		"$maxN":       compileN(codeMinMaxNSpec, extremeN(true)),
		"$minN":       compileN(codeMinMaxNSpec, extremeN(false)),
		"$median":     compileQuantile(false),
		"$percentile": compileQuantile(true),
		"$stdDevPop":  variadic(func(n []exprNode) exprNode { return &funcExpr{name: "$stdDevPop", args: n, fn: stdDev(false)} }),
		"$stdDevSamp": variadic(func(n []exprNode) exprNode { return &funcExpr{name: "$stdDevSamp", args: n, fn: stdDev(true)} }),
	}
}

// nExpr is an operator {n, input} that picks n of an array's elements.
type nExpr struct {
	n, input exprNode
	pick     func(coll *collation.Collator, elems []bsoncore.Value, n int) []bsoncore.Value
}

func compileN(specCode mongoerr.Code, pick func(*collation.Collator, []bsoncore.Value, int) []bsoncore.Value) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		if args.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(specCode, "specification must be an object; found %s", args)
		}
		nodes, err := c.compileNamed(args.Data, []string{"n", "input"}, func(arg string) error {
			return mongoerr.New(codeNUnknownArg, "Unknown argument for 'n' operator: %s", arg)
		})
		switch {
		case err != nil:
			return nil, err
		case nodes[0] == nil:
			return nil, mongoerr.New(codeNMissing, "Missing value for 'n'")
		case nodes[1] == nil:
			return nil, mongoerr.New(codeNInputMissing, "Missing value for 'input'")
		}
		return &nExpr{n: nodes[0], input: nodes[1], pick: pick}, nil
	}
}

func (x *nExpr) eval(e *env) (bsoncore.Value, error) {
	held := e.held
	defer func() { e.held = held }()
	nv, err := x.n.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if !nv.IsNumber() {
		return bsonvalue.Missing, mongoerr.New(codeNNotNumeric, "Value for 'n' must be of integral type, but found %s", describeValue(nv))
	}
	n, err := coerceToLong(nv)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if float64(n) != toFloat64(nv) {
		return bsonvalue.Missing, mongoerr.New(codeNNotIntegral, "Value for 'n' must be of integral type, but found %s", describeValue(nv))
	}
	if n <= 0 {
		return bsonvalue.Missing, mongoerr.New(codeNNotPositive, "'n' must be greater than 0, found %d", n)
	}
	in, err := x.input.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	if in.Type != bsoncore.TypeArray {
		return bsonvalue.Missing, mongoerr.New(codeNInputNotArray, "Input must be an array")
	}
	elems := arrayElements(in)
	return e.buildArray("an n-element operator", x.pick(e.coll, elems, int(min(n, int64(len(elems))))))
}

func describeValue(v bsoncore.Value) string {
	if v.Type == 0 {
		return "MISSING"
	}
	return v.String()
}

func firstN(_ *collation.Collator, elems []bsoncore.Value, n int) []bsoncore.Value { return elems[:n] }

func lastN(_ *collation.Collator, elems []bsoncore.Value, n int) []bsoncore.Value {
	return elems[len(elems)-n:]
}

// extremeN makes $maxN or $minN: the n greatest or least values, null and
// missing left out, greatest or least first. It keeps them as MongoDB's
// ordered multiset does, ordered by value and then arrival, so that which
// of equal values of different types survive is the same too: a newcomer
// displaces the first-ordered kept value for $maxN, the last for $minN,
// when it is strictly better.
func extremeN(greatest bool) func(*collation.Collator, []bsoncore.Value, int) []bsoncore.Value {
	return func(coll *collation.Collator, elems []bsoncore.Value, n int) []bsoncore.Value {
		h := &rankedHeap{worstFirst: func(a, b ranked) bool {
			if greatest {
				return a.before(b, coll)
			}
			return b.before(a, coll)
		}}
		for i, v := range elems {
			if isNullish(v) {
				continue
			}
			if h.Len() < n {
				heap.Push(h, ranked{v, i})
				continue
			}
			r := compareExprValues(coll, v, h.items[0].v)
			if greatest && r > 0 || !greatest && r < 0 {
				h.items[0] = ranked{v, i}
				heap.Fix(h, 0)
			}
		}
		slices.SortFunc(h.items, func(a, b ranked) int {
			if a.before(b, coll) {
				return -1
			}
			return 1
		})
		out := make([]bsoncore.Value, len(h.items))
		for i, r := range h.items {
			out[i] = r.v
		}
		if greatest {
			slices.Reverse(out)
		}
		return out
	}
}

// ranked is a value and its place in the input.
type ranked struct {
	v   bsoncore.Value
	seq int
}

func (a ranked) before(b ranked, coll *collation.Collator) bool {
	if r := compareExprValues(coll, a.v, b.v); r != 0 {
		return r < 0
	}
	return a.seq < b.seq
}

// rankedHeap keeps the value to displace first at its root.
type rankedHeap struct {
	items      []ranked
	worstFirst func(a, b ranked) bool
}

func (h *rankedHeap) Len() int           { return len(h.items) }
func (h *rankedHeap) Less(i, j int) bool { return h.worstFirst(h.items[i], h.items[j]) }
func (h *rankedHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *rankedHeap) Push(x any)         { h.items = append(h.items, x.(ranked)) }
func (h *rankedHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// quantileExpr is $median or $percentile over the numbers of an array, or
// over a single number.
type quantileExpr struct {
	input  exprNode
	ps     []float64
	median bool
}

func compileQuantile(percentile bool) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		code, names := codeMedianSpec, []string{"input", "method"}
		if percentile {
			code, names = codePercentileSpec, []string{"input", "p", "method"}
		}
		if args.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(code, "specification must be an object; found %s", args)
		}
		vals, err := readArgs(args.Data, names, func(field string) error {
			return mongoerr.New(codeIDLUnknownField, "BSON field '%s.%s' is an unknown field.", name, field)
		})
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			if v.Type == 0 {
				return nil, mongoerr.New(codeIDLMissingField, "BSON field '%s.%s' is missing but a required field", name, names[i])
			}
		}
		x := &quantileExpr{median: !percentile, ps: []float64{0.5}}
		if x.input, err = c.compile(vals[0]); err != nil {
			return nil, err
		}
		if percentile {
			if x.ps, err = c.compilePercentiles(vals[1]); err != nil {
				return nil, err
			}
		}
		method := vals[len(vals)-1]
		switch {
		case method.Type != bsoncore.TypeString:
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.method' is the wrong type '%s', expected type 'string'", name, bsonvalue.TypeName(method.Type))
		case stringOf(method) != "approximate":
			return nil, mongoerr.New(mongoerr.BadValue, "Currently only 'approximate' can be used as percentile 'method'.")
		}
		return x, nil
	}
}

// compilePercentiles reads p, which must be constant: an array of numbers
// from 0 to 1. MongoDB folds constant expressions before it checks, so an
// expression that reads no field or variable is evaluated here.
func (c *exprCompiler) compilePercentiles(p bsoncore.Value) ([]float64, error) {
	n, err := c.compile(p)
	if err != nil {
		return nil, err
	}
	if readsInput(p) {
		return nil, mongoerr.New(codePNotConstant, "The $percentile 'p' field must be an array of constant values, but found value: %s", p)
	}
	v, err := n.eval(&env{root: bsoncore.NewDocumentBuilder().Build(), vars: make([]bsoncore.Value, c.slots)})
	if err != nil {
		return nil, err
	}
	const msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: %s"
	if v.Type != bsoncore.TypeArray || len(arrayElements(v)) == 0 {
		return nil, mongoerr.New(codePNotArray, msg, describeValue(v))
	}
	var ps []float64
	for _, elem := range arrayElements(v) {
		if !elem.IsNumber() {
			return nil, mongoerr.New(codePNotNumeric, msg, elem)
		}
		f := toFloat64(elem)
		if !(f >= 0 && f <= 1) {
			return nil, mongoerr.New(codePOutOfRange, msg, bsonvalue.FormatDouble(f))
		}
		ps = append(ps, f)
	}
	return ps, nil
}

// readsInput reports whether an expression refers to a field or a
// variable, which makes it other than constant: whether a string starting
// with "$" appears in it outside $literal.
func readsInput(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString:
		return strings.HasPrefix(stringOf(v), "$")
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if v.Type == bsoncore.TypeEmbeddedDocument && bsonvalue.FirstKey(v.Data) == "$literal" {
			return false
		}
		it := bsonvalue.ElementsOf(v.Data)
		for _, elem, ok := it.Next(); ok; _, elem, ok = it.Next() {
			if readsInput(elem) {
				return true
			}
		}
	}
	return false
}

func (x *quantileExpr) eval(e *env) (bsoncore.Value, error) {
	in, err := x.input.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	var samples []float64
	switch {
	case in.IsNumber():
		samples = []float64{toFloat64(in)}
	case in.Type == bsoncore.TypeArray:
		for _, elem := range arrayElements(in) {
			if elem.IsNumber() {
				samples = append(samples, toFloat64(elem))
			}
		}
	}
	slices.Sort(samples)
	out := make([]bsoncore.Value, len(x.ps))
	for i, p := range x.ps {
		out[i] = bsonvalue.Null
		if len(samples) > 0 {
			out[i] = doubleValue(samples[discreteRank(len(samples), p)])
		}
	}
	if x.median {
		return out[0], nil
	}
	return arrayValue(out), nil
}

// discreteRank is the index among n sorted samples of the p-th percentile:
// the sample below which lies the smallest share of at least p.
func discreteRank(n int, p float64) int {
	if p >= 1 {
		return n - 1
	}
	return max(0, int(math.Ceil(float64(n)*p))-1)
}

// stdDev makes $stdDevPop or $stdDevSamp, over the numbers among the
// arguments, or among the elements of a single array argument, as doubles:
// null when there are none, or only one for the sample.
func stdDev(sample bool) func([]bsoncore.Value) (bsoncore.Value, error) {
	return func(vals []bsoncore.Value) (bsoncore.Value, error) {
		var count int
		var mean, m2 float64
		for _, v := range accumulated(vals) {
			if !v.IsNumber() {
				continue
			}
			x := toFloat64(v)
			count++
			delta := x - mean
			mean += delta / float64(count)
			m2 += delta * (x - mean)
		}
		n := float64(count)
		if sample {
			n--
		}
		if n <= 0 {
			return bsonvalue.Null, nil
		}
		return doubleValue(math.Sqrt(m2 / n)), nil
	}
}
