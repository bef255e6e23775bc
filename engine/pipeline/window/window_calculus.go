package window

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// calculusWindow is $derivative, the slope between the first and last
// documents of the window, or $integral, the area under the input over
// the window by the trapezoidal rule; both against the sortBy field, a
// number, or a date when a unit gives the time scale of the result.
type calculusWindow struct {
	integral bool
	input    *expr.Expr
	unitMs   int64 // 0 without a unit
	bounds   windowBounds
}

func compileDerivative(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	return c.calculus(op, spec, sortBy)
}

func compileIntegral(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	return c.calculus(op, spec, sortBy)
}

func (c *compiler) calculus(op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	switch {
	case sortBy == nil:
		return nil, failedToParse("%s requires a sortBy", op)
	case len(sortBy) != 1:
		return nil, failedToParse("%s requires a non-compound sortBy", op)
	}
	w := &calculusWindow{integral: op == "$integral", bounds: wholePartition}
	hasWindow := false
	var args bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "window":
			if hasWindow {
				return nil, failedToParse("There can be only one 'window' field for %s", op)
			}
			b, err := c.parseWindow(el.Value(), sortBy)
			if err != nil {
				return nil, err
			}
			w.bounds, hasWindow = b, true
		case op:
			args = el.Value()
		default:
			return nil, failedToParse("%s got unexpected argument: %s", op, el.Key())
		}
	}
	sub, ok := args.DocumentOK()
	if !ok {
		return nil, failedToParse("%s expects an object, but got a %s: %s", op, values.TypeNameOf(args), args)
	}
	subElems, _ := sub.Elements()
	for _, el := range subElems {
		switch el.Key() {
		case "input":
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			w.input = ex
		case "unit":
			unit, err := parseTimeUnit(el.Value())
			if err != nil {
				return nil, err
			}
			if w.unitMs = timeUnitMillis[unit]; w.unitMs == 0 {
				return nil, mongoerr.New(mongoerr.Code(5490710), "unit must be 'week' or smaller")
			}
		default:
			return nil, failedToParse("%s got unexpected argument: %s", op, el.Key())
		}
	}
	if w.input == nil {
		return nil, failedToParse("%s requires an 'input' expression", op)
	}
	if !w.integral && !hasWindow {
		return nil, failedToParse("$derivative requires explicit window bounds")
	}
	return w, nil
}

// point is one document of the window: its sortBy value and input.
type point struct {
	x, y bsoncore.Value
}

func (w *calculusWindow) compute(p *partition, out []bsoncore.Value) error {
	xs, err := p.sortValues()
	if err != nil {
		return err
	}
	ys := make([]bsoncore.Value, len(p.docs))
	for i, d := range p.docs {
		if ys[i], err = w.input.EvalContext(p.r.Context(), d); err != nil {
			return err
		}
	}
	for i := range p.docs {
		lo, hi, ok, err := w.bounds.endpoints(p, i)
		switch {
		case err != nil:
			return err
		case !ok:
			out[i] = values.Null
		case w.integral:
			out[i], err = w.integrate(p, xs, ys, lo, hi)
		default:
			out[i], err = w.derive(point{xs[lo], ys[lo]}, point{xs[hi], ys[hi]})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// derive is the slope from a to b, null when they have the same time.
func (w *calculusWindow) derive(a, b point) (bsoncore.Value, error) {
	if w.unitMs != 0 {
		if a.x.Type != bsoncore.TypeDateTime || b.x.Type != bsoncore.TypeDateTime {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5624900), "$derivative with 'unit' expects the sortBy field to be a Date")
		}
	} else {
		if a.x.Type == bsoncore.TypeDateTime || b.x.Type == bsoncore.TypeDateTime {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5624901), "$derivative where the sortBy is a Date requires an 'unit'")
		}
		if !values.IsNumeric(a.x) || !values.IsNumeric(b.x) {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5624902), "$derivative (with no 'unit') expects the sortBy field to be numeric")
		}
	}
	if values.Nullish(a.y) || values.Nullish(b.y) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5624903), "$derivative input must not be null or missing")
	}
	if !values.IsNumeric(a.y) || !values.IsNumeric(b.y) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.TypeMismatch, "can't $subtract %s from %s", bsonvalue.TypeName(a.y.Type), bsonvalue.TypeName(b.y.Type))
	}
	y0, y1 := values.ToFloat(a.y), values.ToFloat(b.y)
	run := timeOf(b.x) - timeOf(a.x)
	if run == 0 {
		return values.Null, nil
	}
	slope := (y1 - y0) / run
	if w.unitMs != 0 {
		slope *= float64(w.unitMs)
	}
	return values.Double(slope), nil
}

// timeOf is a sortBy value as a number: milliseconds for a date, and for
// a timestamp or an ObjectId, the date they convert to.
func timeOf(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeDateTime:
		return float64(v.DateTime())
	case bsoncore.TypeTimestamp:
		t, _ := v.Timestamp()
		return float64(t) * 1000
	case bsoncore.TypeObjectID:
		id := v.ObjectID()
		return float64(uint32(id[0])<<24|uint32(id[1])<<16|uint32(id[2])<<8|uint32(id[3])) * 1000
	}
	f := values.ToFloat(v)
	return f
}

// integrate is the area under the points lo to hi.
func (w *calculusWindow) integrate(p *partition, xs, ys []bsoncore.Value, lo, hi int) (bsoncore.Value, error) {
	sum := 0.0
	for j := lo; j <= hi; j++ {
		if err := p.step(); err != nil {
			return bsoncore.Value{}, err
		}
		if !values.IsNumeric(ys[j]) || !(values.IsNumeric(xs[j]) || xs[j].Type == bsoncore.TypeDateTime) {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5423900), "The input value of $integral window function must be a vector of 2 value, the first value must be numeric or date type and the second must be numeric.")
		}
		if w.unitMs != 0 && xs[j].Type != bsoncore.TypeDateTime {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5423901), "$integral with 'outputUnit' expects the sortBy field to be a Date")
		}
		if w.unitMs == 0 && !values.IsNumeric(xs[j]) {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(5423902), "$integral (with no 'outputUnit') expects the sortBy field to be numeric")
		}
		if j == lo {
			continue
		}
		y0 := values.ToFloat(ys[j-1])
		y1 := values.ToFloat(ys[j])
		sum += (timeOf(xs[j]) - timeOf(xs[j-1])) * (y0 + y1) / 2
	}
	if math.IsNaN(sum) {
		return values.Double(math.NaN()), nil
	}
	if w.unitMs != 0 {
		return values.Double(sum / float64(w.unitMs)), nil
	}
	if lo == hi {
		return intOrLong(0), nil
	}
	return values.Double(sum), nil
}
