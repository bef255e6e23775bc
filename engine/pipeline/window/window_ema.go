package window

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
)

// expMovingAvgWindow is $expMovingAvg: each number moves the average by
// alpha of its distance from it.
//
// MongoDB computes the average in decimal128, whatever the input, and
// gives it as a double unless a decimal came in: so the first value, even
// an int, comes out a double, and later ones are rounded once, from 34
// digits, rather than at every step. Lethe does the same with the
// decimal arithmetic of its expressions: step is
// input × alpha + average × (1 - alpha), over {x: input, p: average}.
type expMovingAvgWindow struct {
	input *expr.Expr
	step  *expr.Expr
}

func compileExpMovingAvg(c *compiler, op string, spec bson.Raw, sortBy []query.SortField) (windowFunc, error) {
	elems, _ := spec.Elements()
	arg, err := spec.LookupErr(op)
	sub, ok := arg.DocumentOK()
	if len(elems) != 1 || err != nil || !ok {
		return nil, failedToParse("$expMovingAvg must have exactly one argument that is an object")
	}
	input, errI := sub.LookupErr("input")
	if n, _ := sub.Elements(); len(n) != 2 || errI != nil {
		return nil, failedToParse("$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field")
	}
	if sortBy == nil {
		return nil, failedToParse("$expMovingAvg requires an explicit 'sortBy'")
	}
	ex, err := c.expr(input)
	if err != nil {
		return nil, err
	}
	var alpha bsoncore.Value // an expression of alpha as a decimal
	if nv, err := sub.LookupErr("N"); err == nil {
		n := bsoncore.Value{Type: bsoncore.Type(nv.Type), Data: nv.Value}
		f := values.ToFloat(n)
		switch {
		case !values.IsNumeric(n):
			return nil, failedToParse("'N' field must be an integer, but found type %s", values.TypeNameOf(nv))
		case f != math.Floor(f):
			return nil, failedToParse("'N' field must be an integer, but found  %s. To use a non-integer, use the 'alpha' argument instead", nv)
		case f <= 0:
			return nil, failedToParse("'N' must be greater than zero. Got %v", f)
		}
		// 2 / (N + 1), N as the whole number MongoDB reads it as.
		alpha = operator("$divide", decimalLiteral("2"), operator("$add", decimalLiteral(strconv.FormatInt(int64(f), 10)), decimalLiteral("1")))
	} else {
		av, err := sub.LookupErr("alpha")
		if err != nil {
			return nil, failedToParse("Got unrecognized field in $expMovingAvg: $expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field")
		}
		a := bsoncore.Value{Type: bsoncore.Type(av.Type), Data: av.Value}
		if !values.IsNumeric(a) {
			return nil, failedToParse("'alpha' must be a number")
		}
		if f := values.ToFloat(a); !(f > 0 && f < 1) {
			return nil, failedToParse("'alpha' must be between 0 and 1 (exclusive), found %s", av)
		}
		// Adding a decimal 0 makes the decimal MongoDB reads alpha as:
		// a double's 15 significant digits.
		alpha = operator("$add", decimalLiteral("0"), literal(a))
	}
	a, err := constantDecimal(alpha)
	if err != nil {
		return nil, err
	}
	b, err := constantDecimal(operator("$subtract", decimalLiteral("1"), a))
	if err != nil {
		return nil, err
	}
	step, err := expr.CompileExpr(operator("$add",
		operator("$multiply", fieldRef("x"), a),
		operator("$multiply", fieldRef("p"), b)))
	if err != nil {
		return nil, err
	}
	return &expMovingAvgWindow{input: ex, step: step}, nil
}

// compute starts the average at the first number and ignores values that
// are not numbers; before the first number it is null.
func (w *expMovingAvgWindow) compute(p *partition, out []bsoncore.Value) error {
	var avg bsoncore.Value // a decimal, Type 0 before the first number
	isDecimal := false
	for i, d := range p.docs {
		if err := p.step(); err != nil {
			return err
		}
		v, err := w.input.EvalContext(p.r.Context(), d)
		if err != nil {
			return err
		}
		if values.IsNumeric(v) {
			isDecimal = isDecimal || v.Type == bsoncore.TypeDecimal128
			if avg.Type == 0 {
				avg, err = constantDecimal(operator("$add", decimalLiteral("0"), literal(v)))
			} else {
				doc := bsoncore.NewDocumentBuilder().AppendValue("x", v).AppendValue("p", avg).Build()
				avg, err = w.step.EvalContext(p.r.Context(), bson.Raw(doc))
			}
			if err != nil {
				return err
			}
		}
		switch {
		case avg.Type == 0:
			out[i] = values.Null
		case isDecimal:
			out[i] = avg
		default:
			out[i] = decimalToDouble(avg)
		}
	}
	return nil
}

// decimalToDouble is the double nearest a decimal.
func decimalToDouble(v bsoncore.Value) bsoncore.Value {
	hi, lo := v.Decimal128()
	f, _ := strconv.ParseFloat(bson.NewDecimal128(hi, lo).String(), 64)
	return values.Double(f)
}

// constantDecimal evaluates an expression of constants that makes a
// decimal.
func constantDecimal(v bsoncore.Value) (bsoncore.Value, error) {
	ex, err := expr.CompileExpr(v)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return ex.Eval(bson.Raw(values.EmptyDoc))
}

// operator is the expression {op: [args...]}.
func operator(op string, args ...bsoncore.Value) bsoncore.Value {
	arr := bsoncore.NewArrayBuilder()
	for _, a := range args {
		arr.AppendValue(a)
	}
	doc := bsoncore.NewDocumentBuilder().AppendArray(op, arr.Build()).Build()
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
}

// literal is the expression {$literal: v}.
func literal(v bsoncore.Value) bsoncore.Value {
	doc := bsoncore.NewDocumentBuilder().AppendValue("$literal", v).Build()
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
}

// decimalLiteral is the decimal s.
func decimalLiteral(s string) bsoncore.Value {
	d, _ := bson.ParseDecimal128(s)
	hi, lo := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

// fieldRef is the expression "$name".
func fieldRef(name string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "$"+name)}
}
