package accum

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// accCompiler compiles the argument of an accumulator into the maker of
// its state.
type accCompiler func(c *compiler, op string, arg bson.RawValue) (func() Accumulator, error)

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
	Result() bsoncore.Value
	Size() int
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

func (a *exprAcc) Add(ctx context.Context, doc bson.Raw) (int, error) {
	v, err := a.arg.EvalContext(ctx, doc)
	if err != nil {
		return 0, err
	}
	if _, ok := a.valueAccumulator.(borrower); !ok {
		v = values.Own(v, doc)
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
	return func(c *compiler, op string, arg bson.RawValue) (func() Accumulator, error) {
		ex, err := c.expr(arg)
		if err != nil {
			return nil, err
		}
		return func() Accumulator {
			acc := mk(op)
			if c, ok := acc.(collated); ok {
				c.collate(ex.Collator())
			}
			return &exprAcc{arg: ex, valueAccumulator: acc}
		}, nil
	}
}

// collated is an accumulator that compares values: it does so under the
// collation of the stage, which its argument was compiled with.
type collated interface {
	collate(coll *collation.Collator)
}

// compileCountAcc compiles {$count: {}}.
func compileCountAcc(c *compiler, op string, arg bson.RawValue) (func() Accumulator, error) {
	if d, ok := arg.DocumentOK(); !ok || len(d) != 5 {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
	}
	return func() Accumulator { return &countAcc{} }, nil
}

// countAcc is $count.
type countAcc struct {
	sum values.Sum
}

func (a *countAcc) Add(context.Context, bson.Raw) (int, error) {
	a.sum.Add(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})
	return 0, nil
}
func (a *countAcc) Result() bsoncore.Value { return a.sum.Value() }
func (a *countAcc) Size() int              { return 16 }

// sumAcc is $sum, or $avg: non-numbers are ignored.
type sumAcc struct {
	avg   bool
	sum   values.Sum
	count int64
}

func (a *sumAcc) take(v bsoncore.Value) (int, error) {
	if values.IsNumeric(v) {
		a.sum.Add(v)
		a.count++
	}
	return 0, nil
}

func (a *sumAcc) Result() bsoncore.Value {
	if !a.avg {
		return a.sum.Value()
	}
	if a.count == 0 {
		return values.Null
	}
	return a.sum.Mean(a.count)
}

func (a *sumAcc) Size() int { return 16 }
func (*sumAcc) borrows()    {}

// valueHolder holds one value, null until set.
type valueHolder struct {
	val bsoncore.Value
	set bool
}

func (h *valueHolder) Result() bsoncore.Value {
	if !h.set {
		return values.Null
	}
	return h.val
}

func (h *valueHolder) Size() int { return max(len(h.val.Data), 16) }

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
	coll *collation.Collator
}

func (a *extremeAcc) collate(coll *collation.Collator) { a.coll = coll }

func (a *extremeAcc) take(v bsoncore.Value) (int, error) {
	if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
		return 0, nil
	}
	if a.set {
		c := a.coll.Compare(v, a.val)
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
		v = values.Null
	}
	return a.keep(v), nil
}

// lastAcc is $last: missing counts as null.
type lastAcc struct{ valueHolder }

func (a *lastAcc) take(v bsoncore.Value) (int, error) {
	if v.Type == 0 {
		v = values.Null
	}
	return a.keep(v), nil
}

// pushAcc is $push, or $addToSet when set is not nil: missing values are
// left out.
type pushAcc struct {
	op     string
	values []bsoncore.Value
	set    map[string]bool
	bytes  int                 // held for values, which MongoDB bounds on their own
	coll   *collation.Collator // $addToSet's values are one when equal under it
}

func (a *pushAcc) collate(coll *collation.Collator) { a.coll = coll }

func (a *pushAcc) take(v bsoncore.Value) (int, error) {
	if v.Type == 0 {
		return 0, nil
	}
	n := len(v.Data)
	if a.set != nil {
		k := string(keycodec.Append(nil, a.coll.Key(v)))
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

func (a *pushAcc) Result() bsoncore.Value { return values.ArrayOf(a.values) }
func (a *pushAcc) Size() int              { return values.ArraySize(a.values) }
