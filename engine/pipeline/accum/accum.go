package accum

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
)

// Accumulator is the state of one accumulator in one group or window.
type Accumulator interface {
	// Add adds doc to the accumulator and returns how many more bytes the
	// accumulator holds.
	Add(ctx context.Context, doc bson.Raw) (int, error)
	// Result is the accumulator's value.
	Result() bsoncore.Value
	// Size is the bytes of the result, at least.
	Size() int
}

// ExprCompiler compiles an expression of an accumulator's argument, as the
// stage that runs the accumulator compiles its own expressions (with its
// $$NOW), so that both see the same options.
type ExprCompiler func(v bson.RawValue) (*expr.Expr, error)

// compiler carries what compiling an accumulator needs.
type compiler struct {
	expr ExprCompiler
}

// Has reports whether op is an accumulator of $group.
func Has(op string) bool {
	_, ok := accumulators[op]
	return ok
}

// Compile compiles the $group accumulator {op: arg} into the maker of its
// state, one for each group. op must be one that Has reports.
func Compile(op string, arg bson.RawValue, compileExpr ExprCompiler) (func() Accumulator, error) {
	return accumulators[op](&compiler{expr: compileExpr}, op, arg)
}

// HasWindow reports whether op is an accumulator a window function can
// run: $group's, or one that only windows have.
func HasWindow(op string) bool {
	return windowAccumulator(op) != nil
}

// CompileWindow compiles the accumulator {op: arg} of a window function
// into the maker of its state, one for each window. op must be one that
// HasWindow reports.
func CompileWindow(op string, arg bson.RawValue, compileExpr ExprCompiler) (func() Accumulator, error) {
	return windowAccumulator(op)(&compiler{expr: compileExpr}, op, arg)
}

// windowAccumulator is the compiler of the accumulator op: $group's, or
// one that only windows have ($covariancePop, $covarianceSamp).
func windowAccumulator(op string) accCompiler {
	if compile, ok := accumulators[op]; ok {
		return compile
	}
	return windowOnlyAccumulators[op]
}

// Start sets a up with its group's _id before its first document, for
// the accumulators that evaluate their n against {_id: <group key>}. A
// window has no group key: it passes a missing id.
func Start(ctx context.Context, a Accumulator, id bsoncore.Value) error {
	if s, ok := a.(starter); ok {
		return s.start(ctx, id)
	}
	return nil
}

// ExprAccumulator is an Accumulator of the values of one expression,
// Input. A window evaluates Input once for each document of its partition
// and hands the values to the accumulator of each window with Take, since
// a document is in many windows.
type ExprAccumulator interface {
	Accumulator
	Input() *expr.Expr
	// Take adds v, a value of Input that the caller keeps, and returns how
	// many more bytes the accumulator holds.
	Take(v bsoncore.Value) (int, error)
}

// Input is the expression whose values a accumulates.
func (a *exprAcc) Input() *expr.Expr { return a.arg }

// Take adds a value of a's Input without copying it.
func (a *exprAcc) Take(v bsoncore.Value) (int, error) { return a.take(v) }
