package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// modulo is $mod: numbers whose value, truncated toward zero, leaves the
// remainder when divided by the divisor. NaN and the infinities never match.
type modulo struct {
	divisor, remainder int64
}

func (m modulo) test(v bsoncore.Value) bool {
	if !v.IsNumber() {
		return false
	}
	n, ok := finiteTruncated(v)
	// Go defines MinInt64 % -1 as 0, so no divisor can make this panic.
	return ok && n%m.divisor == m.remainder
}

func compileMod(op operand) (fieldExpr, error) {
	if op.value.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, needs to be an array")
	}
	it := bsonvalue.ElementsOf(op.value.Data)
	_, divisor, ok := it.Next()
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, not enough elements")
	}
	if !divisor.IsNumber() {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, divisor not a number")
	}
	_, remainder, ok := it.Next()
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, not enough elements")
	}
	if !remainder.IsNumber() {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, remainder not a number")
	}
	if _, _, more := it.Next(); more {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, too many elements")
	}
	m := modulo{}
	if m.divisor, ok = finiteTruncated(divisor); !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type")
	}
	if m.remainder, ok = finiteTruncated(remainder); !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, remainder value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type")
	}
	if m.divisor == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "divisor cannot be 0")
	}
	return &leafExpr{pred: m, leafArrays: true}, nil
}

// finiteTruncated is truncatedValue where NaN and the infinities have no
// value rather than clamped ones.
func finiteTruncated(v bsoncore.Value) (int64, bool) {
	if isInfinite(v) {
		return 0, false
	}
	return truncatedValue(v)
}
