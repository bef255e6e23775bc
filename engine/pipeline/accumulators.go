package pipeline

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// accumulator compiles the accumulator {op: arg} of a $group's field.
func (c *compiler) accumulator(field string, v bson.RawValue) (accField, error) {
	d, ok := v.DocumentOK()
	ops, _ := d.Elements()
	if !ok || len(ops) != 1 {
		return accField{}, mongoerr.New(mongoerr.Code(40234), "The field '%s' must be an accumulator object", field)
	}
	op, arg := ops[0].Key(), ops[0].Value()
	compile, ok := accumulators[op]
	if !ok {
		return accField{}, mongoerr.New(mongoerr.Code(15952), "unknown group operator '%s'", op)
	}
	if arg.Type == bson.TypeArray {
		return accField{}, mongoerr.New(mongoerr.Code(40237), "The %s accumulator is a unary operator", op)
	}
	newAcc, err := compile(c, op, arg)
	if err != nil {
		return accField{}, err
	}
	return accField{field: field, op: op, new: newAcc}, nil
}

// accCompiler compiles the argument of an accumulator into the maker of
// its state.
type accCompiler func(c *compiler, op string, arg bson.RawValue) (func() accumulator, error)

var accumulators = map[string]accCompiler{
	"$sum":      valueAcc(func(string) valueAccumulator { return &sumAcc{} }),
	"$avg":      valueAcc(func(string) valueAccumulator { return &sumAcc{avg: true} }),
	"$min":      valueAcc(func(string) valueAccumulator { return &extremeAcc{} }),
	"$max":      valueAcc(func(string) valueAccumulator { return &extremeAcc{max: true} }),
	"$first":    valueAcc(func(string) valueAccumulator { return &firstAcc{} }),
	"$last":     valueAcc(func(string) valueAccumulator { return &lastAcc{} }),
	"$push":     valueAcc(func(op string) valueAccumulator { return &pushAcc{op: op} }),
	"$addToSet": valueAcc(func(op string) valueAccumulator { return &pushAcc{op: op, set: map[string]bool{}} }),
	"$count":    compileCountAcc,
}

// valueAccumulator is an accumulator of the values of one expression.
type valueAccumulator interface {
	// take adds v, which is Type 0 when missing, and returns how many
	// more bytes the accumulator holds.
	take(v bsoncore.Value) (int, error)
	result() bsoncore.Value
	size() int
}

// exprAcc feeds a valueAccumulator the values of an expression.
type exprAcc struct {
	arg *expr.Expr
	valueAccumulator
}

// borrower is a valueAccumulator that keeps none of the values it takes,
// which therefore need no copy.
type borrower interface {
	borrows()
}

func (a *exprAcc) add(ctx context.Context, doc bson.Raw) (int, error) {
	v, err := a.arg.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	if _, ok := a.valueAccumulator.(borrower); !ok {
		v = own(v, doc)
	}
	return a.take(v)
}

func (a *exprAcc) start(ctx context.Context, id bsoncore.Value) error {
	if s, ok := a.valueAccumulator.(starter); ok {
		return s.start(ctx, id)
	}
	return nil
}

// valueAcc compiles an accumulator whose argument is an expression.
func valueAcc(mk func(op string) valueAccumulator) accCompiler {
	return func(c *compiler, op string, arg bson.RawValue) (func() accumulator, error) {
		ex, err := c.expr(arg)
		if err != nil {
			return nil, err
		}
		return func() accumulator { return &exprAcc{arg: ex, valueAccumulator: mk(op)} }, nil
	}
}

// compileCountAcc compiles {$count: {}}.
func compileCountAcc(c *compiler, op string, arg bson.RawValue) (func() accumulator, error) {
	if d, ok := arg.DocumentOK(); !ok || len(d) != 5 {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
	}
	return func() accumulator { return &countAcc{} }, nil
}

// countAcc is $count.
type countAcc struct {
	sum numberSum
}

func (a *countAcc) add(context.Context, bson.Raw) (int, error) {
	a.sum.add(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})
	return 0, nil
}
func (a *countAcc) result() bsoncore.Value { return a.sum.value() }
func (a *countAcc) size() int              { return 16 }

// sumAcc is $sum, or $avg: non-numbers are ignored.
type sumAcc struct {
	avg   bool
	sum   numberSum
	count int64
}

func (a *sumAcc) take(v bsoncore.Value) (int, error) {
	if isNumeric(v) {
		a.sum.add(v)
		a.count++
	}
	return 0, nil
}

func (a *sumAcc) result() bsoncore.Value {
	if !a.avg {
		return a.sum.value()
	}
	if a.count == 0 {
		return nullValue
	}
	return a.sum.mean(a.count)
}

func (a *sumAcc) size() int { return 16 }
func (*sumAcc) borrows()    {}

// valueHolder holds one value, null until set.
type valueHolder struct {
	val bsoncore.Value
	set bool
}

func (h *valueHolder) result() bsoncore.Value {
	if !h.set {
		return nullValue
	}
	return h.val
}

func (h *valueHolder) size() int { return max(len(h.val.Data), 16) }

// keep sets the value and returns how many more bytes it holds.
func (h *valueHolder) keep(v bsoncore.Value) int {
	old := len(h.val.Data)
	h.val, h.set = v, true
	return len(v.Data) - old
}

// extremeAcc is $min or $max: null and missing are ignored.
type extremeAcc struct {
	max bool
	valueHolder
}

func (a *extremeAcc) take(v bsoncore.Value) (int, error) {
	if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
		return 0, nil
	}
	if a.set {
		c := keycodec.Compare(v, a.val)
		if a.max && c <= 0 || !a.max && c >= 0 {
			return 0, nil
		}
	}
	return a.keep(v), nil
}

// firstAcc is $first: missing counts as null.
type firstAcc struct{ valueHolder }

func (a *firstAcc) take(v bsoncore.Value) (int, error) {
	if a.set {
		return 0, nil
	}
	if v.Type == 0 {
		v = nullValue
	}
	return a.keep(v), nil
}

// lastAcc is $last: missing counts as null.
type lastAcc struct{ valueHolder }

func (a *lastAcc) take(v bsoncore.Value) (int, error) {
	if v.Type == 0 {
		v = nullValue
	}
	return a.keep(v), nil
}

// pushAcc is $push, or $addToSet when set is not nil: missing values are
// left out.
type pushAcc struct {
	op     string
	values []bsoncore.Value
	set    map[string]bool
	bytes  int // held for values, which MongoDB bounds on their own
}

func (a *pushAcc) take(v bsoncore.Value) (int, error) {
	if v.Type == 0 {
		return 0, nil
	}
	n := len(v.Data)
	if a.set != nil {
		k := string(keycodec.Append(nil, v))
		if a.set[k] {
			return 0, nil
		}
		a.set[k] = true
		n += len(k)
	}
	a.values = append(a.values, v)
	return a.gathered(n)
}

// gathered counts n more bytes of values.
func (a *pushAcc) gathered(n int) (int, error) {
	if a.bytes += n; a.bytes > maxAccumulatorBytes {
		return 0, accumulatorExceeded(a.op)
	}
	return n, nil
}

func (a *pushAcc) result() bsoncore.Value { return arrayOf(a.values) }
func (a *pushAcc) size() int              { return arraySize(a.values) }
