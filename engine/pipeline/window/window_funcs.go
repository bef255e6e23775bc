package window

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/accum"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// windowFunc is a compiled window function of $setWindowFields.
type windowFunc interface {
	// compute sets out[i] to the function's value for document i of p.
	compute(p *partition, out []bsoncore.Value) error
}

// windowCompiler compiles the window function spec {op: arg, ...}, given
// the sortBy of the stage.
type windowCompiler func(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error)

// windowFunctions are MongoDB 7's window functions. Those that are also
// $group accumulators run the accumulators of $group over each window.
var windowFunctions map[string]windowCompiler

func init() {
	windowFunctions = map[string]windowCompiler{
		"$rank":           compileRank,
		"$denseRank":      compileRank,
		"$documentNumber": compileRank,
		"$shift":          compileShift,
		"$locf":           compileFillWindow,
		"$linearFill":     compileFillWindow,
		"$expMovingAvg":   compileExpMovingAvg,
		"$derivative":     compileDerivative,
		"$integral":       compileIntegral,
		"$first":          compileEndpoint,
		"$last":           compileEndpoint,
	}
	for _, op := range accumulatorWindows {
		windowFunctions[op] = compileAccumulatorWindow
	}
}

// accumulatorWindows are the window functions that run an accumulator
// over each window; package accum has a compiler for each.
var accumulatorWindows = []string{
	"$sum", "$avg", "$min", "$max", "$push", "$addToSet", "$count",
	"$stdDevPop", "$stdDevSamp", "$covariancePop", "$covarianceSamp",
	"$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN", "$maxN", "$minN",
	"$median", "$percentile",
}

// windowFunction compiles the spec of one output field.
func (c *compiler) windowFunction(spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	elems, _ := spec.Elements()
	for _, el := range elems {
		name := el.Key()
		if !strings.HasPrefix(name, "$") {
			continue
		}
		compile, ok := windowFunctions[name]
		if !ok {
			return nil, failedToParse("Unrecognized window function, %s", name)
		}
		return compile(c, name, spec, sortBy)
	}
	first := ""
	if len(elems) > 0 {
		first = ", " + elems[0].Key()
	}
	return nil, failedToParse("Expected a $-prefixed window function%s", first)
}

// accWindow is a $group accumulator run over the window of each document.
type accWindow struct {
	op     string
	newAcc func() accum.Accumulator
	bounds windowBounds
}

func compileAccumulatorWindow(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	w := &accWindow{op: op, bounds: wholePartition}
	var arg bson.RawValue
	found := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch name := el.Key(); {
		case name == "window":
			b, err := c.parseWindow(el.Value(), sortBy)
			if err != nil {
				return nil, err
			}
			w.bounds = b
		case windowFunctions[name] != nil:
			if found {
				return nil, failedToParse("Cannot specify two functions in window function spec")
			}
			found, arg = true, el.Value()
		default:
			return nil, failedToParse("Window function found an unknown argument: %s", name)
		}
	}
	if d, ok := arg.DocumentOK(); op == "$count" && (!ok || len(d) != 5) {
		return nil, failedToParse("$count only accepts an empty object as input")
	}
	newAcc, err := accum.CompileWindow(op, arg, c.expr)
	if err != nil {
		return nil, err
	}
	w.newAcc = newAcc
	return w, nil
}

// compute runs the accumulator over each window. Windows whose lower end
// stays while the upper end moves on, as running totals' do, grow one
// accumulator; the others start a new one.
func (w *accWindow) compute(p *partition, out []bsoncore.Value) error {
	var acc accum.Accumulator
	var accBytes int
	curLo, curHi := -1, -1
	first, err := w.start(p)
	if err != nil {
		return err
	}
	empty := first.Result()
	add, err := w.adder(p)
	if err != nil {
		return err
	}
	for i := range p.docs {
		lo, hi, ok, err := w.bounds.endpoints(p, i)
		if err != nil {
			return err
		}
		if !ok {
			out[i] = empty
			continue
		}
		if acc == nil || lo != curLo || hi < curHi {
			if err := p.held.Add(-accBytes); err != nil {
				return err
			}
			if acc, err = w.start(p); err != nil {
				return err
			}
			accBytes, curLo, curHi = 0, lo, lo-1
		}
		for ; curHi < hi; curHi++ {
			if err := p.step(); err != nil {
				return err
			}
			grew, err := add(acc, curHi+1)
			if err == nil {
				accBytes += grew
				err = p.held.Add(grew)
			}
			if err != nil {
				return err
			}
		}
		// Each window has its own result, which for $push and the like
		// is an array of the window: counted, as they add up to more
		// than the partition.
		out[i] = acc.Result()
		if err := p.held.Add(len(out[i].Data)); err != nil {
			return err
		}
	}
	return p.held.Add(-accBytes)
}

// start makes a new accumulator for a window. Those that keep n values
// evaluate n there: in a window there is no group key for it to read, so
// it is evaluated against no document, as MongoDB does.
func (w *accWindow) start(p *partition) (accum.Accumulator, error) {
	acc := w.newAcc()
	if err := accum.Start(p.r.Context(), acc, bsoncore.Value{}); err != nil {
		return nil, err
	}
	return acc, nil
}

// adder returns the function that adds document j of p to an
// accumulator. The accumulators of one expression's values get the values
// evaluated once for the partition, since a document is in many windows.
func (w *accWindow) adder(p *partition) (func(acc accum.Accumulator, j int) (int, error), error) {
	probe, ok := w.newAcc().(accum.ExprAccumulator)
	if !ok || w.bounds.unbounded() {
		return func(acc accum.Accumulator, j int) (int, error) { return acc.Add(p.r.Context(), p.docs[j]) }, nil
	}
	vals := make([]bsoncore.Value, len(p.docs))
	for j, d := range p.docs {
		v, err := probe.Input().EvalContext(p.r.Context(), d)
		if err != nil {
			return nil, err
		}
		vals[j] = values.Own(v, d)
		if err := p.held.Add(len(vals[j].Data)); err != nil {
			return nil, err
		}
	}
	return func(acc accum.Accumulator, j int) (int, error) { return acc.(accum.ExprAccumulator).Take(vals[j]) }, nil
}

// endpointWindow is $first or $last: the input of the first or last
// document of the window, missing when the input is, and null for an
// empty window.
type endpointWindow struct {
	last   bool
	input  *expr.Expr
	bounds windowBounds
}

func compileEndpoint(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	w := &endpointWindow{last: op == "$last", bounds: wholePartition}
	hasWindow := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "window":
			if hasWindow {
				return nil, failedToParse("saw multiple 'window' fields in '%s' expression", op)
			}
			b, err := c.parseWindow(el.Value(), sortBy)
			if err != nil {
				return nil, err
			}
			w.bounds, hasWindow = b, true
		case op:
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			w.input = ex
		default:
			return nil, failedToParse("%s got unexpected argument: %s", op, el.Key())
		}
	}
	return w, nil
}

func (w *endpointWindow) compute(p *partition, out []bsoncore.Value) error {
	for i := range p.docs {
		lo, hi, ok, err := w.bounds.endpoints(p, i)
		if err != nil {
			return err
		}
		if !ok {
			out[i] = values.Null
			continue
		}
		d := p.docs[lo]
		if w.last {
			d = p.docs[hi]
		}
		v, err := w.input.EvalContext(p.r.Context(), d)
		if err != nil {
			return err
		}
		out[i] = v // the partition's documents outlive the results
	}
	return nil
}

// rankWindow is $rank, $denseRank or $documentNumber.
type rankWindow struct {
	op string
}

func compileRank(_ *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	elems, _ := spec.Elements()
	if len(elems) != 1 {
		return nil, mongoerr.New(mongoerr.Code(5371601), "Rank style window functions take no other arguments")
	}
	if d, ok := elems[0].Value().DocumentOK(); !ok || len(d) != 5 {
		return nil, mongoerr.New(mongoerr.Code(5371603), "%s must be specified with '{}' as the value", op)
	}
	if len(sortBy) != 1 {
		return nil, mongoerr.New(mongoerr.Code(5371602), "%s must be specified with a top level sortBy expression with exactly one element", op)
	}
	return &rankWindow{op: op}, nil
}

// compute numbers the documents in sort order; documents that sort alike
// (null and missing alike, arrays by their sort key) share a rank.
func (w *rankWindow) compute(p *partition, out []bsoncore.Value) error {
	rank, dense := 0, 0
	for i := range p.docs {
		same := i > 0 && p.w.sort.Compare(p.docs[i-1], p.docs[i]) == 0
		if !same {
			rank, dense = i+1, dense+1
		}
		n := i + 1
		switch w.op {
		case "$rank":
			n = rank
		case "$denseRank":
			n = dense
		}
		out[i] = intOrLong(int64(n))
	}
	return nil
}

// intOrLong is n as an int32 when it fits, else an int64.
func intOrLong(n int64) bsoncore.Value {
	if n == int64(int32(n)) {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
}
