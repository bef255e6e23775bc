package update

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// number is a numeric BSON value for $inc, $mul and $bit, which keep
// MongoDB's typing rules: int32 arithmetic that overflows widens to int64,
// int64 arithmetic that overflows fails, a double makes the result a double
// and a decimal makes it a decimal.
type number struct {
	typ bsoncore.Type // TypeInt32, TypeInt64, TypeDouble or TypeDecimal128
	i   int64
	f   float64
	dec bson.Decimal128
}

func isNumber(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

func toNumber(v bsoncore.Value) number {
	switch v.Type {
	case bsoncore.TypeInt32:
		return number{typ: v.Type, i: int64(v.Int32())}
	case bsoncore.TypeInt64:
		return number{typ: v.Type, i: v.Int64()}
	case bsoncore.TypeDouble:
		return number{typ: v.Type, f: v.Double()}
	default:
		return number{typ: bsoncore.TypeDecimal128, dec: bson.NewDecimal128(v.Decimal128())}
	}
}

func (n number) value() bsoncore.Value {
	var data []byte
	switch n.typ {
	case bsoncore.TypeInt32:
		data = bsoncore.AppendInt32(nil, int32(n.i))
	case bsoncore.TypeInt64:
		data = bsoncore.AppendInt64(nil, n.i)
	case bsoncore.TypeDouble:
		data = bsoncore.AppendDouble(nil, n.f)
	default:
		h, l := n.dec.GetBytes()
		data = bsoncore.AppendDecimal128(nil, h, l)
	}
	return bsoncore.Value{Type: n.typ, Data: data}
}

func (n number) isInt() bool { return n.typ == bsoncore.TypeInt32 || n.typ == bsoncore.TypeInt64 }

func (n number) float() float64 {
	if n.isInt() {
		return float64(n.i)
	}
	return n.f
}

// identical reports whether a and b have the same type and value, which
// makes an arithmetic update a no-op.
func identical(a, b number) bool {
	if a.typ != b.typ {
		return false
	}
	switch a.typ {
	case bsoncore.TypeDouble:
		return a.f == b.f
	case bsoncore.TypeDecimal128:
		return keycodec.Compare(a.value(), b.value()) == 0
	}
	return a.i == b.i
}

// intResult types an integer result: int32 when both operands were int32 and
// the result fits.
func intResult(a, b number, r int64) number {
	if a.typ == bsoncore.TypeInt32 && b.typ == bsoncore.TypeInt32 && r == int64(int32(r)) {
		return number{typ: bsoncore.TypeInt32, i: r}
	}
	return number{typ: bsoncore.TypeInt64, i: r}
}

// add returns a+b; ok is false when int64 arithmetic overflows.
func add(a, b number) (number, bool) {
	switch {
	case a.typ == bsoncore.TypeDecimal128 || b.typ == bsoncore.TypeDecimal128:
		return number{typ: bsoncore.TypeDecimal128, dec: decimalArith(a, b, false)}, true
	case a.typ == bsoncore.TypeDouble || b.typ == bsoncore.TypeDouble:
		return number{typ: bsoncore.TypeDouble, f: a.float() + b.float()}, true
	}
	r := a.i + b.i
	if (r > a.i) != (b.i > 0) {
		return number{}, false
	}
	return intResult(a, b, r), true
}

// mul returns a*b; ok is false when int64 arithmetic overflows.
func mul(a, b number) (number, bool) {
	switch {
	case a.typ == bsoncore.TypeDecimal128 || b.typ == bsoncore.TypeDecimal128:
		return number{typ: bsoncore.TypeDecimal128, dec: decimalArith(a, b, true)}, true
	case a.typ == bsoncore.TypeDouble || b.typ == bsoncore.TypeDouble:
		return number{typ: bsoncore.TypeDouble, f: a.float() * b.float()}, true
	}
	r := a.i * b.i
	if a.i != 0 && (r/a.i != b.i || (a.i == -1 && b.i == math.MinInt64)) {
		return number{}, false
	}
	return intResult(a, b, r), true
}

// debugString writes a number as MongoDB does in arithmetic errors.
func (n number) debugString() string {
	switch n.typ {
	case bsoncore.TypeInt32:
		return "(NumberInt)" + strconv.FormatInt(n.i, 10)
	case bsoncore.TypeInt64:
		return "(NumberLong)" + strconv.FormatInt(n.i, 10)
	case bsoncore.TypeDouble:
		return "(NumberDouble)" + formatDouble(n.f)
	}
	return "(NumberDecimal)" + n.dec.String()
}

func decimalString(v bsoncore.Value) string {
	return bson.NewDecimal128(v.Decimal128()).String()
}

// Decimal arithmetic: operands are converted to decimal (doubles rounded to
// 15 significant digits, as MongoDB converts them), the exact result is
// computed on big integers and rounded half-even to the 34 digits a
// decimal128 holds.

const decimalDigits = 34

var (
	decimalNaN, _    = bson.ParseDecimal128("NaN")
	decimalPosInf, _ = bson.ParseDecimal128("Infinity")
	decimalNegInf, _ = bson.ParseDecimal128("-Infinity")
)

func toDecimal(n number) bson.Decimal128 {
	switch n.typ {
	case bsoncore.TypeDecimal128:
		return n.dec
	case bsoncore.TypeDouble:
		switch {
		case math.IsNaN(n.f):
			return decimalNaN
		case math.IsInf(n.f, 1):
			return decimalPosInf
		case math.IsInf(n.f, -1):
			return decimalNegInf
		}
		d, _ := bson.ParseDecimal128(strconv.FormatFloat(n.f, 'e', 14, 64))
		return d
	}
	d, _ := bson.ParseDecimal128FromBigInt(big.NewInt(n.i), 0)
	return d
}

func decimalArith(a, b number, multiply bool) bson.Decimal128 {
	x, y := toDecimal(a), toDecimal(b)
	if x.IsNaN() || y.IsNaN() {
		return decimalNaN
	}
	if xi, yi := x.IsInf(), y.IsInf(); xi != 0 || yi != 0 {
		return decimalInfArith(x, y, xi, yi, multiply)
	}
	cx, ex, _ := x.BigInt()
	cy, ey, _ := y.BigInt()
	var c *big.Int
	var e int
	if multiply {
		c, e = new(big.Int).Mul(cx, cy), ex+ey
	} else {
		e = min(ex, ey)
		c = new(big.Int).Add(scale(cx, ex-e), scale(cy, ey-e))
	}
	c, e = roundDigits(c, e)
	if d, ok := bson.ParseDecimal128FromBigInt(c, e); ok {
		return d
	}
	if c.Sign() < 0 {
		return decimalNegInf
	}
	return decimalPosInf
}

func decimalInfArith(x, y bson.Decimal128, xi, yi int, multiply bool) bson.Decimal128 {
	if multiply {
		if (xi == 0 && decimalIsZero(x)) || (yi == 0 && decimalIsZero(y)) {
			return decimalNaN
		}
		sign := decimalSign(x, xi) * decimalSign(y, yi)
		if sign < 0 {
			return decimalNegInf
		}
		return decimalPosInf
	}
	switch {
	case xi != 0 && yi != 0 && xi != yi:
		return decimalNaN
	case xi != 0:
		return x
	}
	return y
}

// decimalIsZero reports whether a finite decimal is zero, whatever its
// exponent.
func decimalIsZero(d bson.Decimal128) bool {
	c, _, err := d.BigInt()
	return err == nil && c.Sign() == 0
}

func decimalSign(d bson.Decimal128, inf int) int {
	if inf != 0 {
		return inf
	}
	if h, _ := d.GetBytes(); h>>63 == 1 {
		return -1
	}
	return 1
}

func scale(c *big.Int, digits int) *big.Int {
	if digits == 0 {
		return c
	}
	return new(big.Int).Mul(c, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil))
}

// roundDigits rounds c×10^e half-even to at most 34 significant digits.
func roundDigits(c *big.Int, e int) (*big.Int, int) {
	excess := len(new(big.Int).Abs(c).String()) - decimalDigits
	if excess <= 0 {
		return c, e
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(excess)), nil)
	q, r := new(big.Int).QuoRem(c, div, new(big.Int))
	r.Abs(r).Mul(r, big.NewInt(2))
	if cmp := r.Cmp(div); cmp > 0 || (cmp == 0 && q.Bit(0) == 1) {
		if c.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	// Rounding up may carry into one more digit; one more pass removes it.
	return roundDigits(q, e+excess)
}

// integer reads a number that must hold an integer, as MongoDB reads
// $slice, $position and $pop.
func integer(name string, v bsoncore.Value) (int64, error) {
	if !isNumber(v.Type) {
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected a number in: %s", describe(name, v))
	}
	n := toNumber(v)
	if n.isInt() {
		return n.i, nil
	}
	f := n.f
	if n.typ == bsoncore.TypeDecimal128 {
		f, _ = strconv.ParseFloat(n.dec.String(), 64)
	}
	switch {
	case math.IsNaN(f):
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer, but found NaN in: %s", describe(name, v))
	case f >= math.MaxInt64 || f < math.MinInt64:
		return 0, mongoerr.New(mongoerr.FailedToParse, "Cannot represent as a 64-bit integer: %s", describe(name, v))
	case f != math.Trunc(f):
		return 0, mongoerr.New(mongoerr.FailedToParse, "Expected an integer: %s", describe(name, v))
	}
	return int64(f), nil
}
