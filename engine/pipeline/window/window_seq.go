package window

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// The window functions that look at the documents of a partition in
// order rather than at a window of them: $shift, $locf, $linearFill,
// $expMovingAvg, and the calculus of $derivative and $integral.

// shiftWindow is $shift: the output of the document by places away.
type shiftWindow struct {
	output *expr.Expr
	by     int
	def    bsoncore.Value
}

func compileShift(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	var w *shiftWindow
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch name := el.Key(); {
		case name == "window":
			return nil, failedToParse("$shift does not accept a 'window' field")
		case windowFunctions[name] != nil:
			if w != nil {
				return nil, failedToParse("Cannot specify multiple functions in window function spec")
			}
			args, ok := el.Value().DocumentOK()
			if !ok {
				return nil, failedToParse("Argument to $shift must be an object")
			}
			var err error
			if w, err = c.shiftArgs(args); err != nil {
				return nil, err
			}
		default:
			return nil, failedToParse("Window function found an unknown argument: %s", name)
		}
	}
	if sortBy == nil {
		return nil, failedToParse("'$shift' requires a sortBy")
	}
	return w, nil
}

func (c *compiler) shiftArgs(args bson.Raw) (*shiftWindow, error) {
	w := &shiftWindow{def: values.Null}
	foundBy := false
	elems, _ := args.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "output":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			w.output = ex
		case "default":
			d, err := c.constant(v)
			if err != nil {
				return nil, err
			}
			if d.Type == 0 {
				return nil, failedToParse("'$shift:default' expression must yield a constant value.")
			}
			w.def = d
		case "by":
			n, ok := bsonvalue.IntegerValue(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
			if !ok || n != int64(int32(n)) {
				return nil, failedToParse("'$shift:by' field must be an integer, but found  %s", v)
			}
			w.by, foundBy = int(n), true
		default:
			return nil, failedToParse("Unknown argument in $shift")
		}
	}
	if w.output == nil {
		return nil, failedToParse("$shift requires an 'output' expression.")
	}
	if !foundBy {
		return nil, failedToParse("$shift requires 'by' as an integer value.")
	}
	return w, nil
}

// constant evaluates an expression that must not depend on the document,
// such as $shift's default: a field path evaluates to missing.
func (c *compiler) constant(v bson.RawValue) (bsoncore.Value, error) {
	if s, ok := v.StringValueOK(); ok && len(s) > 0 && s[0] == '$' {
		return bsoncore.Value{}, nil
	}
	ex, err := c.expr(v)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return ex.Eval(bson.Raw(values.EmptyDoc))
}

func (w *shiftWindow) compute(p *partition, out []bsoncore.Value) error {
	for i := range p.docs {
		j := i + w.by
		if j < 0 || j >= len(p.docs) {
			out[i] = w.def
			continue
		}
		v, err := w.output.EvalContext(p.r.Context(), p.docs[j])
		if err != nil {
			return err
		}
		out[i] = v // the partition's documents outlive the results
	}
	return nil
}

// fillWindow is $locf, which carries the last value that is not null
// forward, or $linearFill, which interpolates between such values by the
// sortBy field.
type fillWindow struct {
	linear bool
	input  *expr.Expr
}

func compileFillWindow(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	w := &fillWindow{linear: op == "$linearFill"}
	hasWindow := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch name := el.Key(); {
		case name == "window":
			hasWindow = true
		case windowFunctions[name] != nil:
			if w.input != nil {
				return nil, failedToParse("Cannot specify two functions in window function spec")
			}
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			w.input = ex
		default:
			return nil, failedToParse("Window function found an unknown argument: %s", name)
		}
	}
	if hasWindow {
		return nil, failedToParse("'window' field is not allowed in %s", op)
	}
	if w.linear && len(sortBy) != 1 {
		return nil, mongoerr.New(mongoerr.Code(605001), "%s must be specified with a top level sortBy expression with exactly one element", op)
	}
	return w, nil
}

func (w *fillWindow) compute(p *partition, out []bsoncore.Value) error {
	vals := make([]bsoncore.Value, len(p.docs))
	for i, d := range p.docs {
		if err := p.step(); err != nil {
			return err
		}
		v, err := w.input.EvalContext(p.r.Context(), d)
		if err != nil {
			return err
		}
		vals[i] = values.Own(v, d)
	}
	if !w.linear {
		last := values.Null
		for i, v := range vals {
			if !values.Nullish(v) {
				last = v
			}
			out[i] = last
		}
		return nil
	}
	xs, err := p.sortValues()
	if err != nil {
		return err
	}
	if err := checkLinearFill(vals, xs); err != nil {
		return err
	}
	prev := -1
	for i, v := range vals {
		if values.Nullish(v) {
			out[i] = values.Null
			continue
		}
		out[i] = v
		if prev >= 0 {
			interpolate(xs, vals, out, prev, i)
		}
		prev = i
	}
	return nil
}

// checkLinearFill refuses what $linearFill cannot fill: values that are
// neither numbers nor null, sortBy values that are neither numbers nor
// dates, or both, or repeated, which would leave the line ambiguous.
func checkLinearFill(ys, xs []bsoncore.Value) error {
	for i, y := range ys {
		if !values.IsNumeric(y) && !values.Nullish(y) {
			return mongoerr.New(mongoerr.TypeMismatch, "Value to be filled must be numeric or nullish, but found %s", bsonvalue.TypeName(y.Type))
		}
		x := xs[i]
		if !values.IsNumeric(x) && !isDateLike(x) {
			return mongoerr.New(mongoerr.TypeMismatch, "Value of the sortBy field must be numeric or a date, but found %s", bsonvalue.TypeName(orNull(x).Type))
		}
		if i == 0 {
			continue
		}
		prev := xs[i-1]
		if keycodec.Compare(prev, x) == 0 {
			return mongoerr.New(mongoerr.Code(6050106), "There can be no repeated values in the sort field")
		}
		if values.IsNumeric(prev) != values.IsNumeric(x) {
			return mongoerr.New(mongoerr.TypeMismatch, "Conflicting sort value types, previously received type %s, but found %s", bsonvalue.TypeName(prev.Type), bsonvalue.TypeName(x.Type))
		}
	}
	return nil
}

// isDateLike reports whether v converts to a date: a date, a timestamp
// or an ObjectId.
func isDateLike(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeObjectID:
		return true
	}
	return false
}

// interpolate fills the values between the documents a and b, whose
// values are numbers, on the line through them, by their sortBy values,
// in the order of MongoDB's arithmetic: y1 + (x - x1) * ((y2 - y1) / (x2 - x1)).
func interpolate(xs, ys, out []bsoncore.Value, a, b int) {
	x1, x2 := timeOf(xs[a]), timeOf(xs[b])
	y1 := values.ToFloat(ys[a])
	y2 := values.ToFloat(ys[b])
	slope := (y2 - y1) / (x2 - x1)
	for i := a + 1; i < b; i++ {
		out[i] = values.Double(y1 + (timeOf(xs[i])-x1)*slope)
	}
}
