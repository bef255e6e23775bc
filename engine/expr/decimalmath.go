package expr

import (
	"math/big"
	"strconv"
	"strings"
)

// The transcendental functions of decimal128, which MongoDB computes to
// all 34 digits: exponentials, logarithms, powers, roots and trigonometry.
// They are evaluated with binary floats of far more precision than 34
// decimal digits need, and the result rounded to decimal128, so that it is
// the correctly rounded value but for the rarest of near-ties.

// floatPrec is the working precision in bits: 34 decimal digits need 113,
// and the rest absorbs what argument reduction and series lose.
const floatPrec = 320

func newFloat() *big.Float { return new(big.Float).SetPrec(floatPrec) }

func floatOf(n int64) *big.Float { return newFloat().SetInt64(n) }

// bigFloat converts a finite decimal to a float: exactly when it is an
// integer, as reducing a huge argument of sin needs, else to floatPrec.
func (d decimal) bigFloat() *big.Float {
	var f *big.Float
	if d.exp >= 0 {
		n := new(big.Int).Mul(d.c(), pow10(d.exp))
		f = new(big.Float).SetPrec(max(floatPrec, uint(n.BitLen()))).SetInt(n)
	} else {
		f = newFloat().SetInt(d.c())
		f.Quo(f, newFloat().SetInt(pow10(-d.exp)))
	}
	if d.neg {
		f.Neg(f)
	}
	return f
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// decimalFromBig rounds a float to decimal128, to all 34 digits as an
// inexact result has them. A result that may be exact, as √4 is, says so
// with mayBeExact: it then drops trailing zeros after the decimal point
// when 34 digits hold it exactly, so that √4 comes out as 2, not 2.000….
// Other transcendental functions of numbers other than 0 and 1 are never
// exact, however close to a short decimal they come.
func decimalFromBig(f *big.Float, mayBeExact bool) decimal {
	switch {
	case f.IsInf():
		return decimal{form: infinite, neg: f.Signbit()}
	case f.Sign() == 0:
		return decimal{neg: f.Signbit()}
	}
	s := f.Text('e', decimalDigits-1)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mantissa, exponent, _ := strings.Cut(s, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	exp, _ := strconv.Atoi(exponent)
	exp -= len(digits) - 1
	// A value that 34 digits hold exactly has only zeros after them at a
	// far greater precision.
	exact := strings.TrimRight(strings.Replace(strings.Split(new(big.Float).Abs(f).Text('e', 2*decimalDigits), "e")[0], ".", "", 1), "0")
	for mayBeExact && exp < 0 && len(exact) < decimalDigits && len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	coef, _ := new(big.Int).SetString(digits, 10)
	return decimal{neg: neg, coef: coef, exp: exp}.round()
}

// floatPi returns π to prec bits, by Machin's formula in fixed point:
// reducing a huge argument needs π to tens of thousands of bits, which
// integer arithmetic computes far faster than floats.
func floatPi(prec uint) *big.Float {
	guard := prec + 64
	a := atanInverse(5, guard)
	a.Lsh(a, 4)
	b := atanInverse(239, guard)
	b.Lsh(b, 2)
	pi := new(big.Float).SetPrec(prec).SetInt(a.Sub(a, b))
	return pi.SetMantExp(pi, -int(guard))
}

// atanInverse is atan(1/n) for an integer n > 1, by its series, scaled by
// 2^bits.
func atanInverse(n int64, bits uint) *big.Int {
	power := new(big.Int).Lsh(big.NewInt(1), bits)
	power.Quo(power, big.NewInt(n))
	sum := new(big.Int).Set(power)
	n2 := big.NewInt(n * n)
	term := new(big.Int)
	for k := int64(1); power.Sign() != 0; k++ {
		power.Quo(power, n2)
		term.Quo(power, big.NewInt(2*k+1))
		if k%2 == 1 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
	}
	return sum
}

// tiny is the size below which a series term no longer matters.
func tiny() *big.Float { return new(big.Float).SetMantExp(big.NewFloat(1), -floatPrec-16) }

// floatExp is e^x.
func floatExp(x *big.Float) *big.Float {
	// Beyond these the result is outside decimal128's range anyway.
	if x.Cmp(floatOf(16000)) > 0 {
		return new(big.Float).SetInf(false)
	}
	if x.Cmp(floatOf(-16000)) < 0 {
		return newFloat()
	}
	// e^x = (e^(x/2^k))^(2^k), with x/2^k small enough for the series.
	k := max(0, x.MantExp(nil)+12)
	r := newFloat().SetMantExp(x, -k)
	sum, term := floatOf(1), floatOf(1)
	for n := int64(1); ; n++ {
		term.Mul(term, r).Quo(term, floatOf(n))
		if new(big.Float).Abs(term).Cmp(tiny()) < 0 {
			break
		}
		sum.Add(sum, term)
	}
	for range k {
		sum.Mul(sum, sum)
	}
	return sum
}

// floatLn is the natural logarithm of x > 0.
func floatLn(x *big.Float) *big.Float {
	// x = m·2^e with m in [0.5, 1); ln x = ln m + e·ln 2.
	if x.Cmp(floatOf(1)) == 0 {
		return newFloat()
	}
	m := newFloat()
	e := x.MantExp(m)
	m.SetPrec(floatPrec)
	r := atanhSeries(newFloat().Quo(newFloat().Sub(m, floatOf(1)), newFloat().Add(m, floatOf(1))))
	r.Mul(r, floatOf(2))
	if e != 0 {
		ln2 := atanhSeries(newFloat().Quo(floatOf(1), floatOf(3)))
		ln2.Mul(ln2, floatOf(2))
		r.Add(r, ln2.Mul(ln2, floatOf(int64(e))))
	}
	return r
}

// atanhSeries is atanh(z) for |z| ≤ 1/2: z + z³/3 + z⁵/5 + ….
func atanhSeries(z *big.Float) *big.Float {
	z2 := newFloat().Mul(z, z)
	sum, power := newFloat().Set(z), newFloat().Set(z)
	for k := int64(1); ; k++ {
		power.Mul(power, z2)
		t := newFloat().Quo(power, floatOf(2*k+1))
		if new(big.Float).Abs(t).Cmp(tiny()) < 0 || t.Sign() == 0 {
			return sum
		}
		sum.Add(sum, t)
	}
}

// floatSinCos returns sin x and cos x.
func floatSinCos(x *big.Float) (sin, cos *big.Float) {
	// Reduce by 2π, with π to as many more bits as x has integer bits.
	prec := uint(floatPrec + max(0, x.MantExp(nil)) + 16)
	pi := floatPi(prec)
	twoPi := new(big.Float).SetPrec(prec).Mul(pi, new(big.Float).SetInt64(2))
	r := new(big.Float).SetPrec(prec).Set(x)
	q := new(big.Float).SetPrec(prec).Quo(r, twoPi)
	qi, _ := q.Int(nil)
	r.Sub(r, new(big.Float).SetPrec(prec).Mul(twoPi, new(big.Float).SetPrec(prec).SetInt(qi)))
	r = newFloat().Set(r)
	// Taylor series of sin and cos about 0 for |r| < 2π.
	r2 := newFloat().Mul(r, r)
	sin, cos = newFloat().Set(r), floatOf(1)
	term := newFloat().Set(r)
	for n := int64(2); ; n += 2 {
		term.Mul(term, r2).Quo(term, floatOf(n*(n+1))).Neg(term)
		sin.Add(sin, term)
		if new(big.Float).Abs(term).Cmp(tiny()) < 0 {
			break
		}
	}
	term = floatOf(1)
	for n := int64(1); ; n += 2 {
		term.Mul(term, r2).Quo(term, floatOf(n*(n+1))).Neg(term)
		cos.Add(cos, term)
		if new(big.Float).Abs(term).Cmp(tiny()) < 0 {
			break
		}
	}
	return sin, cos
}

// floatAtan is the arctangent of x.
func floatAtan(x *big.Float) *big.Float {
	if x.Sign() < 0 {
		r := floatAtan(newFloat().Neg(x))
		return r.Neg(r)
	}
	if x.IsInf() {
		return newFloat().Quo(floatPi(floatPrec), floatOf(2))
	}
	if x.Cmp(floatOf(1)) > 0 {
		r := newFloat().Quo(floatPi(floatPrec), floatOf(2))
		return r.Sub(r, floatAtan(newFloat().Quo(floatOf(1), x)))
	}
	// atan x = 2·atan(x / (1 + √(1+x²))), until x is small.
	r := newFloat().Set(x)
	doublings := 0
	for r.Cmp(newFloat().SetFloat64(0.01)) > 0 {
		s := newFloat().Mul(r, r)
		s.Add(s, floatOf(1)).Sqrt(s).Add(s, floatOf(1))
		r.Quo(r, s)
		doublings++
	}
	r2 := newFloat().Mul(r, r)
	sum, power := newFloat().Set(r), newFloat().Set(r)
	for k := int64(1); ; k++ {
		power.Mul(power, r2).Neg(power)
		t := newFloat().Quo(power, floatOf(2*k+1))
		if new(big.Float).Abs(t).Cmp(tiny()) < 0 || t.Sign() == 0 {
			break
		}
		sum.Add(sum, t)
	}
	return sum.SetMantExp(sum, doublings)
}

// floatSqrt is √x for x ≥ 0.
func floatSqrt(x *big.Float) *big.Float {
	if x.Sign() == 0 {
		return newFloat()
	}
	return newFloat().Sqrt(x)
}
