package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// decimal is a decimal128 number for arithmetic, which the BSON library
// does not do. Finite values are ±coef × 10^exp; the sign is kept apart
// from the coefficient so that negative zero survives. Results are rounded
// to decimal128's 34 digits, half to even, as IEEE 754-2008 prescribes.
type decimal struct {
	form decimalForm
	neg  bool
	coef *big.Int // not negative; nil means zero
	exp  int
}

type decimalForm uint8

const (
	finite decimalForm = iota
	infinite
	notANumber
)

// The limits of decimal128: 34 digits, and the exponents of the
// coefficient read as an integer.
const (
	decimalDigits = 34
	decimalMinExp = -6176
	decimalMaxExp = 6111
)

var bigTen = big.NewInt(10)

type rounding uint8

const (
	roundHalfEven rounding = iota
	roundTowardZero
)

func (d decimal) c() *big.Int {
	if d.coef == nil {
		return new(big.Int)
	}
	return d.coef
}

func (d decimal) isZero() bool { return d.form == finite && d.c().Sign() == 0 }

// decimalOf converts a number to a decimal, exactly but for doubles, which
// MongoDB rounds to 15 significant digits.
func decimalOf(v bsoncore.Value) decimal {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		x := bson.NewDecimal128(hi, lo)
		neg := hi>>63 == 1
		switch {
		case x.IsNaN():
			return decimal{form: notANumber}
		case x.IsInf() != 0:
			return decimal{form: infinite, neg: neg}
		}
		coef, exp, _ := x.BigInt()
		return decimal{neg: neg, coef: coef.Abs(coef), exp: exp}
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return decimalFromFloat(f)
	}
	return decimalFromInt(toInt64(v))
}

func decimalFromInt(i int64) decimal {
	coef := big.NewInt(i)
	return decimal{neg: i < 0, coef: coef.Abs(coef)}
}

// decimalFromFloat converts a double the way MongoDB does: zero as it is,
// anything else rounded to exactly 15 significant digits.
func decimalFromFloat(f float64) decimal {
	switch {
	case math.IsNaN(f):
		return decimal{form: notANumber}
	case math.IsInf(f, 0):
		return decimal{form: infinite, neg: f < 0}
	case f == 0:
		return decimal{neg: math.Signbit(f)}
	}
	s := strconv.FormatFloat(math.Abs(f), 'e', 14, 64)
	mantissa, exponent, _ := strings.Cut(s, "e")
	coef, _ := new(big.Int).SetString(strings.Replace(mantissa, ".", "", 1), 10)
	exp, _ := strconv.Atoi(exponent)
	return decimal{neg: f < 0, coef: coef, exp: exp - 14}
}

// value encodes d, rounded to what decimal128 holds.
func (d decimal) value() bsoncore.Value {
	var hi, lo uint64
	switch d = d.round(); d.form {
	case notANumber:
		hi = 0x7c00000000000000
	case infinite:
		hi = 0x7800000000000000
	default:
		x, _ := bson.ParseDecimal128FromBigInt(d.c(), d.exp)
		hi, lo = x.GetBytes()
	}
	if d.neg && d.form != notANumber {
		hi |= 1 << 63
	}
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

func numDigits(x *big.Int) int {
	if x.Sign() == 0 {
		return 1
	}
	return len(x.String())
}

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// round brings d within decimal128's digits and exponents: excess digits
// are rounded away half to even, exponents above the range padded with
// zeros or overflowed to infinity, and below it rounded to subnormals.
func (d decimal) round() decimal {
	if d.form != finite {
		return d
	}
	coef, exp := d.c(), d.exp
	shift := max(numDigits(coef)-decimalDigits, decimalMinExp-exp)
	if shift > 0 {
		coef = divRound(coef, pow10(shift), roundHalfEven)
		exp += shift
		if numDigits(coef) > decimalDigits {
			coef.Quo(coef, bigTen)
			exp++
		}
	}
	if coef.Sign() == 0 {
		exp = min(max(exp, decimalMinExp), decimalMaxExp)
	}
	for exp > decimalMaxExp && numDigits(coef) < decimalDigits {
		coef = new(big.Int).Mul(coef, bigTen)
		exp--
	}
	if exp > decimalMaxExp {
		return decimal{form: infinite, neg: d.neg}
	}
	return decimal{neg: d.neg, coef: coef, exp: exp}
}

// divRound divides non-negative integers, rounding as mode says.
func divRound(x, y *big.Int, mode rounding) *big.Int {
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	if mode == roundTowardZero || r.Sign() == 0 {
		return q
	}
	switch new(big.Int).Lsh(r, 1).Cmp(y) {
	case 1:
		q.Add(q, big.NewInt(1))
	case 0:
		if q.Bit(0) == 1 {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// aligned returns the signed coefficients of a and b over their common,
// smaller exponent.
func aligned(a, b decimal) (x, y *big.Int, exp int) {
	exp = min(a.exp, b.exp)
	x = new(big.Int).Mul(a.c(), pow10(a.exp-exp))
	y = new(big.Int).Mul(b.c(), pow10(b.exp-exp))
	if a.neg {
		x.Neg(x)
	}
	if b.neg {
		y.Neg(y)
	}
	return x, y, exp
}

func (a decimal) negate() decimal {
	a.neg = !a.neg
	return a
}

func (a decimal) abs() decimal {
	if a.form != notANumber {
		a.neg = false
	}
	return a
}

func (a decimal) add(b decimal) decimal {
	switch {
	case a.form == notANumber || b.form == notANumber:
		return decimal{form: notANumber}
	case a.form == infinite && b.form == infinite && a.neg != b.neg:
		return decimal{form: notANumber}
	case a.form == infinite:
		return a
	case b.form == infinite:
		return b
	}
	x, y, exp := aligned(a, b)
	s := x.Add(x, y)
	// An exact zero sum is negative only when both operands are.
	neg := s.Sign() < 0 || s.Sign() == 0 && a.neg && b.neg
	return decimal{neg: neg, coef: s.Abs(s), exp: exp}.round()
}

func (a decimal) sub(b decimal) decimal { return a.add(b.negate()) }

func (a decimal) mul(b decimal) decimal {
	neg := a.neg != b.neg
	switch {
	case a.form == notANumber || b.form == notANumber:
		return decimal{form: notANumber}
	case a.form == infinite && b.isZero() || b.form == infinite && a.isZero():
		return decimal{form: notANumber}
	case a.form == infinite || b.form == infinite:
		return decimal{form: infinite, neg: neg}
	}
	return decimal{neg: neg, coef: new(big.Int).Mul(a.c(), b.c()), exp: a.exp + b.exp}.round()
}

// quo divides by a divisor that is not zero. An exact quotient keeps the
// exponent closest to the difference of the operands' exponents.
func (a decimal) quo(b decimal) decimal {
	neg := a.neg != b.neg
	switch {
	case a.form == notANumber || b.form == notANumber:
		return decimal{form: notANumber}
	case a.form == infinite && b.form == infinite:
		return decimal{form: notANumber}
	case a.form == infinite:
		return decimal{form: infinite, neg: neg}
	case b.form == infinite:
		return decimal{neg: neg, exp: decimalMinExp}
	}
	preferred := a.exp - b.exp
	if a.isZero() {
		return decimal{neg: neg, exp: preferred}.round()
	}
	// Enough digits that rounding to 34 is decided by them and a final
	// digit standing for any remainder.
	k := max(0, decimalDigits+2+numDigits(b.c())-numDigits(a.c()))
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(a.c(), pow10(k)), b.c(), new(big.Int))
	exp := preferred - k
	if r.Sign() != 0 {
		q.Mul(q, bigTen).Add(q, big.NewInt(1))
		exp--
	} else {
		zero := new(big.Int)
		for exp < preferred {
			div, m := new(big.Int).QuoRem(q, bigTen, new(big.Int))
			if m.Cmp(zero) != 0 {
				break
			}
			q, exp = div, exp+1
		}
	}
	return decimal{neg: neg, coef: q, exp: exp}.round()
}

// rem is the remainder of division truncated toward zero, with the sign
// of the dividend, as C's fmod; b is not zero.
func (a decimal) rem(b decimal) decimal {
	switch {
	case a.form == notANumber || b.form == notANumber || a.form == infinite:
		return decimal{form: notANumber}
	case b.form == infinite:
		return a
	}
	x, y, exp := aligned(a.abs(), b.abs())
	r := x.Rem(x, y)
	return decimal{neg: a.neg, coef: r, exp: exp}.round()
}

// int64 converts d to an integer, rounding as mode says; ok is false for
// NaN, the infinities and values out of range.
func (d decimal) int64(mode rounding) (int64, bool) {
	if d.form != finite {
		return 0, false
	}
	var n *big.Int
	if d.exp >= 0 {
		n = new(big.Int).Mul(d.c(), pow10(d.exp))
	} else {
		n = divRound(d.c(), pow10(-d.exp), mode)
	}
	if d.neg {
		n.Neg(n)
	}
	if !n.IsInt64() {
		return 0, false
	}
	return n.Int64(), true
}

// float64 converts d to the nearest double; ok is false when it is too
// large for one.
func (d decimal) float64() (float64, bool) {
	switch d.form {
	case notANumber:
		return math.NaN(), true
	case infinite:
		if d.neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	s := d.c().String() + "e" + strconv.Itoa(d.exp)
	if d.neg {
		s = "-" + s
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil || !math.IsInf(f, 0)
}
