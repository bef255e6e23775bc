package pipeline

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/mongoerr"
)

// windowAccumulators are the $group accumulators a window may run.
var windowAccumulators = map[string]bool{
	"$addToSet": true, "$avg": true, "$bottom": true, "$bottomN": true, "$count": true,
	"$first": true, "$firstN": true, "$last": true, "$lastN": true, "$max": true, "$maxN": true,
	"$median": true, "$min": true, "$minN": true, "$percentile": true, "$push": true,
	"$stdDevPop": true, "$stdDevSamp": true, "$sum": true, "$top": true, "$topN": true,
}

// windowOutput compiles {<function>: <args>, window: {...}}.
func (c *compiler) windowOutput(s *windowStage, v bson.RawValue) (windowOutput, error) {
	spec, ok := v.DocumentOK()
	if !ok {
		return windowOutput{}, specError(mongoerr.FailedToParse, "The field '%s' must be an object", v)
	}
	var o windowOutput
	var fnName string
	var fnArg, window bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "window":
			if el.Value().Type != bson.TypeEmbeddedDocument {
				return o, specError(mongoerr.FailedToParse, "'window' field must be an object")
			}
			window = el.Value()
		case len(k) > 0 && k[0] == '$' && fnName == "":
			fnName, fnArg = k, el.Value()
		case len(k) > 0 && k[0] == '$':
			return o, specError(mongoerr.FailedToParse, "%s got unexpected argument: %s", fnName, k)
		default:
			return o, specError(mongoerr.FailedToParse, "Expected a $-prefixed window function, %s", k)
		}
	}
	if fnName == "" {
		return o, specError(mongoerr.FailedToParse, "Expected a $-prefixed window function")
	}
	if window.Type != 0 {
		b, err := parseWindow(window.Document(), s)
		if err != nil {
			return o, err
		}
		o.win = b
	}
	needSort := func() error {
		if s.sortBy == nil {
			return specError(mongoerr.FailedToParse, "%s requires an explicit 'sortBy'", fnName)
		}
		return nil
	}
	noWindow := func() error {
		if o.win.explicit {
			return specError(mongoerr.FailedToParse, "%s does not accept a 'window' field", fnName)
		}
		return nil
	}
	switch {
	case windowAccumulators[fnName]:
		raw := bsoncore.NewDocumentBuilder().AppendValue(fnName, bsoncore.Value{Type: bsoncore.Type(fnArg.Type), Data: fnArg.Value}).Build()
		c.inWindow = true
		a, err := c.accumulator("", bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw})
		c.inWindow = false
		if err != nil {
			return o, err
		}
		o.fn = &accWindow{acc: a}
		return o, nil
	case fnName == "$rank" || fnName == "$denseRank" || fnName == "$documentNumber":
		if d, ok := fnArg.DocumentOK(); !ok || len(d) != 5 {
			return o, specError(mongoerr.FailedToParse, "%s takes no arguments, i.e. %s: {}", fnName, fnName)
		}
		if s.sortBy == nil || s.sortField == nil {
			return o, specError(5371601, "%s must be specified with a top level sortBy expression with exactly one element", fnName)
		}
		if err := noWindow(); err != nil {
			return o, err
		}
		o.fn = &rankWindow{op: fnName}
		return o, nil
	case fnName == "$shift":
		if err := needSort(); err != nil {
			return o, err
		}
		if err := noWindow(); err != nil {
			return o, err
		}
		f, err := c.shiftWindow(fnArg)
		o.fn = f
		return o, err
	case fnName == "$expMovingAvg":
		if err := needSort(); err != nil {
			return o, err
		}
		if err := noWindow(); err != nil {
			return o, err
		}
		f, err := c.emaWindow(fnArg)
		o.fn = f
		return o, err
	case fnName == "$derivative" || fnName == "$integral":
		if err := needSort(); err != nil {
			return o, err
		}
		if s.sortField == nil {
			return o, specError(mongoerr.FailedToParse, "%s requires a sortBy with exactly one field", fnName)
		}
		if fnName == "$derivative" && !o.win.explicit {
			return o, specError(mongoerr.FailedToParse, "$derivative requires explicit window bounds")
		}
		f, err := c.rateWindow(fnName, fnArg)
		o.fn = f
		return o, err
	case fnName == "$locf" || fnName == "$linearFill":
		if err := needSort(); err != nil {
			return o, err
		}
		if err := noWindow(); err != nil {
			return o, err
		}
		if fnName == "$linearFill" && s.sortField == nil {
			return o, specError(605001, "$linearFill requires exactly one sortBy field")
		}
		ex, err := c.expr(fnArg)
		o.fn = &fillWindow{op: fnName, input: ex}
		return o, err
	}
	return o, specError(mongoerr.FailedToParse, "Unrecognized window function, %s", fnName)
}

// parseWindow reads {documents: [lo, hi]} or {range: [lo, hi], unit}.
func parseWindow(spec bson.Raw, s *windowStage) (windowBounds, error) {
	b := windowBounds{explicit: true}
	var bounds bson.RawValue
	kinds := 0
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "documents":
			bounds, kinds = el.Value(), kinds+1
		case "range":
			bounds, kinds, b.isRange = el.Value(), kinds+1, true
		case "unit":
			u, ok := el.Value().StringValueOK()
			if !ok || !timeUnits[u] {
				return b, specError(mongoerr.FailedToParse, "'unit' must be one of the time units, found %s", el.Value())
			}
			b.unit = u
		default:
			return b, specError(mongoerr.FailedToParse, "'window' field that has unexpected argument: %s", el.Key())
		}
	}
	if kinds != 1 {
		return b, specError(mongoerr.FailedToParse, "'window' field can only specify one of 'documents' or 'range'")
	}
	if b.unit != "" && !b.isRange {
		return b, specError(mongoerr.FailedToParse, "Window bounds can only specify 'unit' with range-based bounds.")
	}
	arr, ok := bounds.ArrayOK()
	vals, _ := arr.Values()
	if !ok || len(vals) != 2 {
		return b, specError(mongoerr.FailedToParse, "Window bounds must be a 2-element array")
	}
	var ends [2]*bsoncore.Value
	for i, v := range vals {
		bv := bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
		switch str, _ := v.StringValueOK(); {
		case str == "unbounded":
		case str == "current":
			ends[i] = &bsoncore.Value{}
		case !b.isRange:
			n, ok := bsonvalue.IntegerValue(bv)
			if !ok || n != int64(int32(n)) {
				return b, specError(mongoerr.FailedToParse, "Numeric document-based bounds must be an integer")
			}
			ends[i] = &bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
		case isNumeric(bv):
			if b.unit != "" {
				if _, ok := bsonvalue.IntegerValue(bv); !ok {
					return b, specError(mongoerr.FailedToParse, "With 'unit', range-based bounds must be an integer")
				}
			}
			ends[i] = &bv
		default:
			return b, specError(mongoerr.FailedToParse, "Range-based bounds expression must be a number")
		}
	}
	b.lo, b.hi = ends[0], ends[1]
	if b.lo != nil && b.hi != nil && b.lo.Type != 0 && b.hi.Type != 0 && toFloat(*b.lo) > toFloat(*b.hi) {
		return b, specError(5339900, "Lower bound must not exceed upper bound")
	}
	if b.isRange && (s.sortBy == nil || s.sortField == nil) {
		return b, specError(mongoerr.FailedToParse, "Range-based bounds require sortBy a single field")
	}
	if !b.isRange && (b.lo != nil || b.hi != nil) && s.sortBy == nil {
		return b, specError(mongoerr.FailedToParse, "Document-based bounds require a sortBy")
	}
	return b, nil
}

// accWindow runs a $group accumulator over each window.
type accWindow struct {
	acc accField
}

func (f *accWindow) values(r *run, _ *windowStage, docs []bson.Raw, win func(int) (int, int, error), out []bsoncore.Value) error {
	var running accumulator // over [0, last] as last grows
	added := -1
	for i := range docs {
		lo, hi, err := win(i)
		if err != nil {
			return err
		}
		if lo == 0 && hi >= added {
			// Windows from the start grow: keep adding to one accumulator.
			if running == nil {
				if running, err = newWindowAcc(r.ctx, f.acc); err != nil {
					return err
				}
			}
			for ; added < hi; added++ {
				if _, err := running.add(r.ctx, docs[added+1]); err != nil {
					return err
				}
			}
			out[i] = running.result()
			continue
		}
		a, err := newWindowAcc(r.ctx, f.acc)
		if err != nil {
			return err
		}
		for j := lo; j <= hi; j++ {
			if _, err := a.add(r.ctx, docs[j]); err != nil {
				return err
			}
		}
		out[i] = a.result()
	}
	return nil
}

// newWindowAcc makes an accumulator for a window; its n, if any, is a
// constant.
func newWindowAcc(ctx context.Context, f accField) (accumulator, error) {
	a := f.new()
	if s, ok := a.(starter); ok {
		if err := s.start(ctx, nullValue); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// rankWindow is $rank, $denseRank or $documentNumber.
type rankWindow struct {
	op string
}

func (f *rankWindow) values(_ *run, s *windowStage, docs []bson.Raw, _ func(int) (int, int, error), out []bsoncore.Value) error {
	rank, dense := 0, 0
	for i := range docs {
		tie := i > 0 && s.sortBy.Compare(docs[i-1], docs[i]) == 0
		if !tie {
			rank, dense = i+1, dense+1
		}
		n := i + 1
		switch f.op {
		case "$rank":
			n = rank
		case "$denseRank":
			n = dense
		}
		out[i] = intOrLong(int64(n))
	}
	return nil
}

func intOrLong(n int64) bsoncore.Value {
	if n == int64(int32(n)) {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
	}
	return int64Value(n)
}

// shiftWindow is $shift: the output of the document by positions away.
type shiftWindow struct {
	output *expr.Expr
	by     int
	def    bsoncore.Value
}

func (c *compiler) shiftWindow(arg bson.RawValue) (windowFunc, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.FailedToParse, "Argument to $shift must be an object")
	}
	f := &shiftWindow{def: nullValue}
	haveBy, haveOut := false, false
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		bv := bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
		switch el.Key() {
		case "output":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			f.output, haveOut = ex, true
		case "by":
			n, ok := bsonvalue.IntegerValue(bv)
			if !ok || n != int64(int32(n)) {
				return nil, specError(mongoerr.FailedToParse, "'$shift:by' field must be an integer, but found %s", v)
			}
			f.by, haveBy = int(n), true
		case "default":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			if readsDocument(v) {
				return nil, specError(mongoerr.FailedToParse, "'$shift:default' expression must yield a constant value.")
			}
			d, err := ex.Eval(bson.Raw(emptyDoc))
			if err != nil {
				return nil, err
			}
			f.def = own(d, nil)
		default:
			return nil, specError(mongoerr.FailedToParse, "Unknown argument in $shift: %s", el.Key())
		}
	}
	if !haveBy || !haveOut {
		return nil, specError(mongoerr.FailedToParse, "$shift requires an 'output' and a 'by' field")
	}
	return f, nil
}

func (f *shiftWindow) values(r *run, _ *windowStage, docs []bson.Raw, _ func(int) (int, int, error), out []bsoncore.Value) error {
	for i := range docs {
		j := i + f.by
		if j < 0 || j >= len(docs) {
			out[i] = f.def
			continue
		}
		v, err := evalOrNull(r.ctx, f.output, docs[j])
		if err != nil {
			return err
		}
		out[i] = v
	}
	return nil
}

// emaWindow is $expMovingAvg: each number weighs alpha, the average
// before it 1 - alpha; other values leave the average as it was.
type emaWindow struct {
	input *expr.Expr
	alpha float64
}

func (c *compiler) emaWindow(arg bson.RawValue) (windowFunc, error) {
	spec, ok := arg.DocumentOK()
	elems, _ := spec.Elements()
	if !ok || len(elems) != 2 {
		return nil, specError(mongoerr.FailedToParse, "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field")
	}
	f := &emaWindow{}
	for _, el := range elems {
		v := el.Value()
		bv := bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
		switch el.Key() {
		case "input":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			f.input = ex
		case "N":
			n, ok := bsonvalue.IntegerValue(bv)
			if !isNumeric(bv) || !ok {
				return nil, specError(mongoerr.FailedToParse, "'N' field must be an integer, but found %s", v)
			}
			if n <= 0 {
				return nil, specError(mongoerr.FailedToParse, "'N' must be greater than zero. Got %d", n)
			}
			f.alpha = 2 / (float64(n) + 1)
		case "alpha":
			a := toFloat(bv)
			if !isNumeric(bv) || !(a > 0 && a < 1) {
				return nil, specError(mongoerr.FailedToParse, "'alpha' must be between 0 and 1 (exclusive), found %s", v)
			}
			f.alpha = a
		default:
			return nil, specError(mongoerr.FailedToParse, "Got unrecognized field in $expMovingAvg: %s", el.Key())
		}
	}
	if f.input == nil || f.alpha == 0 {
		return nil, specError(mongoerr.FailedToParse, "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field")
	}
	return f, nil
}

func (f *emaWindow) values(r *run, _ *windowStage, docs []bson.Raw, _ func(int) (int, int, error), out []bsoncore.Value) error {
	var avg float64
	seen := false
	for i, d := range docs {
		v, err := f.input.EvalContext(r.ctx, d)
		if err != nil {
			return err
		}
		if isNumeric(v) {
			x := toFloat(v)
			if !seen {
				avg, seen = x, true
			} else {
				avg = x*f.alpha + avg*(1-f.alpha)
			}
		}
		if seen {
			out[i] = doubleValue(avg)
		} else {
			out[i] = nullValue
		}
	}
	return nil
}

// rateWindow is $derivative, the rate of change between the first and
// last documents of the window, or $integral, the area under the values
// by the trapezoidal rule; both over the sortBy field, in units of time
// for dates.
type rateWindow struct {
	op    string
	input *expr.Expr
	unit  string
}

func (c *compiler) rateWindow(op string, arg bson.RawValue) (windowFunc, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.FailedToParse, "%s expects an object argument", op)
	}
	f := &rateWindow{op: op}
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "input":
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			f.input = ex
		case "unit":
			u, ok := el.Value().StringValueOK()
			if !ok || !timeUnits[u] || u == "month" || u == "quarter" || u == "year" {
				return nil, specError(mongoerr.FailedToParse, "%s 'unit' must be a fixed time unit, found %s", op, el.Value())
			}
			f.unit = u
		default:
			return nil, specError(mongoerr.FailedToParse, "%s got unexpected argument: %s", op, el.Key())
		}
	}
	if f.input == nil {
		return nil, specError(mongoerr.FailedToParse, "%s requires an 'input' expression", op)
	}
	return f, nil
}

// unitMillis are the lengths of the fixed time units.
var unitMillis = map[string]float64{
	"millisecond": 1, "second": 1e3, "minute": 60e3, "hour": 3600e3, "day": 86400e3, "week": 7 * 86400e3,
}

// position is the sortBy value of d on the x axis.
func (f *rateWindow) position(s *windowStage, d bson.Raw) (float64, error) {
	x := lookupPath(d, s.sortField)
	switch {
	case x.Type == bsoncore.TypeDateTime && f.unit != "":
		return float64(x.DateTime()), nil
	case x.Type == bsoncore.TypeDateTime:
		return 0, mongoerr.New(5624900, "%s where the sortBy is a Date requires a 'unit'", f.op)
	case f.unit != "":
		return 0, mongoerr.New(5624901, "%s with 'unit' expects the sortBy field to be a Date, but it was %s", f.op, typeName(x))
	case isNumeric(x):
		return toFloat(x), nil
	}
	return 0, mongoerr.New(5624902, "%s expects the sortBy field to be numeric or a date, but it was %s", f.op, typeName(x))
}

func (f *rateWindow) values(r *run, s *windowStage, docs []bson.Raw, win func(int) (int, int, error), out []bsoncore.Value) error {
	for i := range docs {
		lo, hi, err := win(i)
		if err != nil {
			return err
		}
		if f.op == "$derivative" {
			if hi <= lo {
				out[i] = nullValue
				continue
			}
			x0, y0, err := f.point(r, s, docs[lo])
			if err != nil {
				return err
			}
			x1, y1, err := f.point(r, s, docs[hi])
			if err != nil {
				return err
			}
			out[i] = doubleValue((y1 - y0) / f.span(x0, x1))
			continue
		}
		if hi < lo {
			out[i] = nullValue
			continue
		}
		sum := 0.0
		px, py, err := f.point(r, s, docs[lo])
		if err != nil {
			return err
		}
		for j := lo + 1; j <= hi; j++ {
			x, y, err := f.point(r, s, docs[j])
			if err != nil {
				return err
			}
			sum += (py + y) / 2 * f.span(px, x)
			px, py = x, y
		}
		out[i] = doubleValue(sum)
	}
	return nil
}

// span is the distance from x0 to x1, in the unit for dates, whose
// positions are milliseconds.
func (f *rateWindow) span(x0, x1 float64) float64 {
	if f.unit == "" {
		return x1 - x0
	}
	return (x1 - x0) / unitMillis[f.unit]
}

// point is the position and the numeric input of d.
func (f *rateWindow) point(r *run, s *windowStage, d bson.Raw) (float64, float64, error) {
	x, err := f.position(s, d)
	if err != nil {
		return 0, 0, err
	}
	v, err := f.input.EvalContext(r.ctx, d)
	if err != nil {
		return 0, 0, err
	}
	if !isNumeric(v) {
		return 0, 0, mongoerr.New(5423901, "%s input must be numeric, found %s", f.op, typeName(v))
	}
	return x, toFloat(v), nil
}

// fillWindow is $locf or $linearFill as window functions.
type fillWindow struct {
	op    string
	input *expr.Expr
}

func (f *fillWindow) values(r *run, s *windowStage, docs []bson.Raw, _ func(int) (int, int, error), out []bsoncore.Value) error {
	// Evaluate the input of every document into a field of its own, then
	// fill as $fill does.
	tmp := make([]bson.Raw, len(docs))
	field := []string{"v"}
	for i, d := range docs {
		v, err := f.input.EvalContext(r.ctx, d)
		if err != nil {
			return err
		}
		b := bsoncore.NewDocumentBuilder()
		if x := lookupPath(d, s.sortField); s.sortField != nil && x.Type != 0 {
			b.AppendValue("x", x)
		}
		if v.Type != 0 {
			b.AppendValue("v", v)
		}
		tmp[i] = bson.Raw(b.Build())
	}
	fs := &fillStage{sortField: []string{"x"}}
	method := "locf"
	if f.op == "$linearFill" {
		method = "linear"
	}
	if err := fs.fillField(r, tmp, fillOutput{field: field, method: method}); err != nil {
		return err
	}
	for i, d := range tmp {
		out[i] = lookupPath(d, field)
	}
	return nil
}

// timeOf is the time of a date value.
func timeOf(v bsoncore.Value) time.Time { return time.UnixMilli(v.DateTime()).UTC() }

func dateValue(t time.Time) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, t.UnixMilli())}
}
