package ttlindex

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// ParseTSExpireAfter validates the expireAfterSeconds of a _ts index, the
// collection's default lifetime (rule 5): Never, or 1..math.MaxInt32 given
// as an int32, an int64 or a double with no fractional part. Anything else,
// 0 included, is a BadValue error.
func ParseTSExpireAfter(v bsoncore.Value) (int32, error) {
	n, ok := exactInt32(v)
	if !ok || !validTTL(n) {
		return 0, mongoerr.New(mongoerr.BadValue,
			"expireAfterSeconds of the _ts index must be -1 (no default expiry) or a whole number of seconds from 1 to 2147483647, got %s",
			describe(v))
	}
	return n, nil
}

// ParseDateExpireAfter validates the expireAfterSeconds of a MongoDB TTL
// index on a date field (rule 19) as MongoDB does: any number but NaN,
// truncated toward zero, then 0..math.MaxInt32. Anything else is a
// CannotCreateIndex error.
func ParseDateExpireAfter(v bsoncore.Value) (int32, error) {
	n, isNumber := truncatedSeconds(v)
	switch {
	case !isNumber:
		return 0, mongoerr.New(mongoerr.CannotCreateIndex,
			"TTL index expireAfterSeconds must be a number, got %s", describe(v))
	case n == nil:
		return 0, mongoerr.New(mongoerr.CannotCreateIndex, "TTL index expireAfterSeconds must not be NaN")
	case n.Sign() < 0:
		return 0, mongoerr.New(mongoerr.CannotCreateIndex,
			"TTL index expireAfterSeconds must not be negative, got %s", describe(v))
	case !n.IsInt64() || n.Int64() > math.MaxInt32:
		return 0, mongoerr.New(mongoerr.CannotCreateIndex,
			"TTL index expireAfterSeconds must be at most 2147483647, got %s", describe(v))
	}
	return int32(n.Int64()), nil
}

// truncatedSeconds returns the number v holds with any fraction dropped, nil
// for NaN, and isNumber=false if v is not a number. Infinities come back as
// values just out of range on their side.
func truncatedSeconds(v bsoncore.Value) (n *big.Int, isNumber bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		if i, ok := v.Int32OK(); ok {
			return big.NewInt(int64(i)), true
		}
	case bsoncore.TypeInt64:
		if i, ok := v.Int64OK(); ok {
			return big.NewInt(i), true
		}
	case bsoncore.TypeDouble:
		f, ok := v.DoubleOK()
		switch {
		case !ok:
		case math.IsNaN(f):
			return nil, true
		case math.IsInf(f, 0):
			return beyondInt32(int(math.Copysign(1, f))), true
		default:
			i, _ := big.NewFloat(f).Int(nil)
			return i, true
		}
	case bsoncore.TypeDecimal128:
		h, l, ok := v.Decimal128OK()
		if !ok {
			break
		}
		d := bson.NewDecimal128(h, l)
		if d.IsNaN() {
			return nil, true
		}
		if sign := d.IsInf(); sign != 0 {
			return beyondInt32(sign), true
		}
		coef, exp, err := d.BigInt()
		if err != nil {
			break
		}
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
		if exp >= 0 {
			return coef.Mul(coef, scale), true
		}
		return coef.Quo(coef, scale), true
	}
	return nil, false
}

// beyondInt32 returns a number just outside the int32 range, on the side of sign.
func beyondInt32(sign int) *big.Int {
	if sign < 0 {
		return big.NewInt(math.MinInt32 - 1)
	}
	return big.NewInt(math.MaxInt32 + 1)
}

// describe names v in an error message: a number by its value, anything
// else by its type.
func describe(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32:
		if n, ok := v.Int32OK(); ok {
			return strconv.FormatInt(int64(n), 10)
		}
	case bsoncore.TypeInt64:
		if n, ok := v.Int64OK(); ok {
			return strconv.FormatInt(n, 10)
		}
	case bsoncore.TypeDouble:
		if f, ok := v.DoubleOK(); ok {
			// Whole numbers print as users typed them, not in e-notation.
			if f == math.Trunc(f) && math.Abs(f) < 1e15 {
				return strconv.FormatFloat(f, 'f', -1, 64)
			}
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case bsoncore.TypeDecimal128:
		if h, l, ok := v.Decimal128OK(); ok {
			return bson.NewDecimal128(h, l).String()
		}
	}
	return "a value of type " + v.Type.String()
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
