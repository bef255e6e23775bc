package expr

import (
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// MongoDB's codes for trigonometry: an argument outside a function's
// domain, and either argument of $atan2 not a number.
const (
	codeTrigDomain    mongoerr.Code = 50989
	codeAtan2First    mongoerr.Code = 51044
	codeAtan2Second   mongoerr.Code = 51045
	piOver180Decimal                = "0.01745329251994329576923690768488613"
	d180OverPiDecimal               = "57.29577951308232087679815481410517"
)

// trigFunction is a trigonometric operator of one argument: its double
// and decimal functions, and the bounds of its domain, which are inclusive
// or exclusive; a function without bounds takes any number, the
// infinities included.
type trigFunction struct {
	double    func(float64) float64
	decimal   func(*big.Float) *big.Float
	bounded   bool
	inclusive bool
	low, high float64
	// limits gives the values at the infinities, which the float functions
	// cannot take.
	limits func(neg bool) decimal
}

func trigOperators() map[string]exprOperator {
	everywhere := trigFunction{bounded: true, low: math.Inf(-1), high: math.Inf(1)}
	unit := trigFunction{bounded: true, inclusive: true, low: -1, high: 1}
	fns := map[string]trigFunction{
		"$sin": with(everywhere, math.Sin, func(x *big.Float) *big.Float { s, _ := floatSinCos(x); return s }),
		"$cos": with(everywhere, math.Cos, func(x *big.Float) *big.Float { _, c := floatSinCos(x); return c }),
		"$tan": with(everywhere, math.Tan, func(x *big.Float) *big.Float {
			s, c := floatSinCos(x)
			return s.Quo(s, c)
		}),
		"$asin":  with(unit, math.Asin, floatAsin),
		"$acos":  with(unit, math.Acos, floatAcos),
		"$atanh": with(unit, math.Atanh, floatAtanh),
		"$acosh": with(trigFunction{bounded: true, inclusive: true, low: 1, high: math.Inf(1)}, math.Acosh, floatAcosh),
		"$atan": withLimits(math.Atan, floatAtan, func(neg bool) decimal {
			return decimalFromBig(floatHalfPi(), false).signed(neg)
		}),
		"$sinh":  withLimits(math.Sinh, floatSinh, func(neg bool) decimal { return decimal{form: infinite, neg: neg} }),
		"$cosh":  withLimits(math.Cosh, floatCosh, func(bool) decimal { return decimal{form: infinite} }),
		"$tanh":  withLimits(math.Tanh, floatTanh, func(neg bool) decimal { return decimalFromInt(1).signed(neg) }),
		"$asinh": withLimits(math.Asinh, floatAsinh, func(neg bool) decimal { return decimal{form: infinite, neg: neg} }),
	}
	// The double factors are MongoDB's: computed from the double nearest π,
	// in double arithmetic.
	pi := float64(math.Pi)
	ops := map[string]exprOperator{
		"$atan2":            fixed(2, atan2),
		"$degreesToRadians": fixed(1, numericArg("$degreesToRadians", angleConversion(piOver180Decimal, pi/180))),
		"$radiansToDegrees": fixed(1, numericArg("$radiansToDegrees", angleConversion(d180OverPiDecimal, 180/pi))),
	}
	for name, fn := range fns {
		ops[name] = fixed(1, numericArg(name, fn.apply(name)))
	}
	return ops
}

func with(bounds trigFunction, double func(float64) float64, dec func(*big.Float) *big.Float) trigFunction {
	bounds.double, bounds.decimal = double, dec
	return bounds
}

func withLimits(double func(float64) float64, dec func(*big.Float) *big.Float, limits func(neg bool) decimal) trigFunction {
	return trigFunction{double: double, decimal: dec, limits: limits}
}

func (d decimal) signed(neg bool) decimal {
	d.neg = neg
	return d
}

// inDomain reports whether x lies within the function's bounds.
func (f trigFunction) inDomain(x float64) bool {
	if f.inclusive {
		return x >= f.low && x <= f.high
	}
	return x > f.low && x < f.high
}

func (f trigFunction) apply(name string) func(bsoncore.Value) (bsoncore.Value, error) {
	outside := func(what string) error {
		open, shut := "(", ")"
		if f.inclusive {
			open, shut = "[", "]"
		}
		return mongoerr.New(codeTrigDomain, "cannot apply %s to %s, value must in %s%s,%s%s", name, what, open, bsonvalue.FormatDouble(f.low), bsonvalue.FormatDouble(f.high), shut)
	}
	return func(v bsoncore.Value) (bsoncore.Value, error) {
		if v.Type != bsoncore.TypeDecimal128 {
			x := toFloat64(v)
			if math.IsNaN(x) {
				return v, nil
			}
			if f.bounded && !f.inDomain(x) {
				return bsonvalue.Missing, outside(bsonvalue.FormatDouble(x))
			}
			return doubleValue(f.double(x)), nil
		}
		d := decimalOf(v)
		if d.form == notANumber {
			return v, nil
		}
		if f.bounded {
			// The bounds are integers or infinite, which a double compares
			// exactly; a decimal beyond a finite bound is beyond it as a
			// double too, but for a hair's breadth that the exact test sees.
			if !f.decimalInDomain(d) {
				return bsonvalue.Missing, outside(decimalString(v))
			}
		}
		switch {
		case d.form == infinite && f.limits != nil:
			return f.limits(d.neg).value(), nil
		case d.form == infinite:
			// Only $acosh takes an infinity, +∞, whose value it is.
			return v, nil
		case d.isZero() && f.double(0) == 1:
			// cos and cosh are exactly 1 at 0.
			return decimalFromInt(1).value(), nil
		}
		return d.transcendental(f.decimal, false).value(), nil
	}
}

// decimalInDomain is inDomain, exactly, for a decimal.
func (f trigFunction) decimalInDomain(d decimal) bool {
	if d.form == infinite {
		x := math.Inf(1)
		if d.neg {
			x = math.Inf(-1)
		}
		return f.inDomain(x)
	}
	x := d.bigFloat()
	cmp := func(bound float64) int {
		if math.IsInf(bound, 0) {
			if bound < 0 {
				return 1
			}
			return -1
		}
		return x.Cmp(big.NewFloat(bound))
	}
	lo, hi := cmp(f.low), cmp(f.high)
	if f.inclusive {
		return lo >= 0 && hi <= 0
	}
	return lo > 0 && hi < 0
}

func floatHalfPi() *big.Float {
	pi := floatPi(floatPrec)
	return pi.SetMantExp(pi, -1)
}

func floatAsin(x *big.Float) *big.Float {
	one := floatOf(1)
	if new(big.Float).Abs(x).Cmp(one) == 0 {
		r := floatHalfPi()
		if x.Sign() < 0 {
			r.Neg(r)
		}
		return r
	}
	s := newFloat().Mul(x, x)
	s.Sub(one, s).Sqrt(s)
	return floatAtan(s.Quo(x, s))
}

func floatAcos(x *big.Float) *big.Float {
	r := floatHalfPi()
	return r.Sub(r, floatAsin(x))
}

func floatAtanh(x *big.Float) *big.Float {
	one := floatOf(1)
	if new(big.Float).Abs(x).Cmp(one) == 0 {
		return new(big.Float).SetInf(x.Sign() < 0)
	}
	if new(big.Float).Abs(x).Cmp(big.NewFloat(0.5)) <= 0 {
		return atanhSeries(x)
	}
	r := floatLn(newFloat().Quo(newFloat().Add(one, x), newFloat().Sub(one, x)))
	return r.SetMantExp(r, -1)
}

func floatAcosh(x *big.Float) *big.Float {
	s := newFloat().Mul(x, x)
	s.Sub(s, floatOf(1)).Sqrt(s)
	return floatLn(s.Add(s, x))
}

func floatAsinh(x *big.Float) *big.Float {
	s := newFloat().Mul(x, x)
	s.Add(s, floatOf(1)).Sqrt(s)
	if new(big.Float).Abs(x).Cmp(big.NewFloat(0.5)) < 0 {
		return atanhSeries(s.Quo(x, s))
	}
	r := floatLn(s.Add(s, new(big.Float).Abs(x)))
	if x.Sign() < 0 {
		r.Neg(r)
	}
	return r
}

// floatSinh is sinh x: by its series near zero, where the difference of
// exponentials would cancel, and from them elsewhere.
func floatSinh(x *big.Float) *big.Float {
	if new(big.Float).Abs(x).Cmp(floatOf(1)) < 0 {
		x2 := newFloat().Mul(x, x)
		sum, term := newFloat().Set(x), newFloat().Set(x)
		for n := int64(2); ; n += 2 {
			term.Mul(term, x2).Quo(term, floatOf(n*(n+1)))
			if new(big.Float).Abs(term).Cmp(tiny()) < 0 || term.Sign() == 0 {
				return sum
			}
			sum.Add(sum, term)
		}
	}
	r := floatExp(x)
	if r.IsInf() {
		return r
	}
	r.Sub(r, floatExp(newFloat().Neg(x)))
	return r.SetMantExp(r, -1)
}

func floatCosh(x *big.Float) *big.Float {
	r := floatExp(new(big.Float).Abs(x))
	if r.IsInf() {
		return r
	}
	r.Add(r, floatExp(newFloat().Neg(new(big.Float).Abs(x))))
	return r.SetMantExp(r, -1)
}

func floatTanh(x *big.Float) *big.Float {
	// Far from zero tanh is ±1 to many more digits than decimal128 has.
	if new(big.Float).Abs(x).Cmp(floatOf(200)) > 0 {
		return floatOf(int64(x.Sign()))
	}
	return newFloat().Quo(floatSinh(x), floatCosh(x))
}

// atan2 is $atan2: the angle of the point (x, y), given as [y, x].
func atan2(v []bsoncore.Value) (bsoncore.Value, error) {
	y, x := v[0], v[1]
	switch {
	case isNullish(y):
		return bsonvalue.Null, nil
	case !y.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codeAtan2First, "$atan2 only supports numeric types, not %s", bsonvalue.TypeName(y.Type))
	case isNullish(x):
		return bsonvalue.Null, nil
	case !x.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codeAtan2Second, "$atan2 only supports numeric types, not %s", bsonvalue.TypeName(x.Type))
	}
	if y.Type != bsoncore.TypeDecimal128 && x.Type != bsoncore.TypeDecimal128 {
		return doubleValue(math.Atan2(toFloat64(y), toFloat64(x))), nil
	}
	dy, dx := decimalOf(y), decimalOf(x)
	switch {
	case dy.form == notANumber || dx.form == notANumber:
		return decimal{form: notANumber}.value(), nil
	case dy.form == infinite || dx.form == infinite:
		fy, _ := dy.float64()
		fx, _ := dx.float64()
		return decimalFromBig(newFloat().SetFloat64(math.Atan2(fy, fx)), false).value(), nil
	}
	return decimalFromBig(floatAtan2(dy.bigFloat(), dx.bigFloat()), false).value(), nil
}

func floatAtan2(y, x *big.Float) *big.Float {
	switch {
	case x.Sign() > 0:
		return floatAtan(newFloat().Quo(y, x))
	case x.Sign() < 0:
		r := floatAtan(newFloat().Quo(y, x))
		if y.Signbit() {
			return r.Sub(r, floatPi(floatPrec))
		}
		return r.Add(r, floatPi(floatPrec))
	case y.Sign() == 0:
		return newFloat()
	}
	r := floatHalfPi()
	if y.Sign() < 0 {
		r.Neg(r)
	}
	return r
}

// angleConversion makes $degreesToRadians or $radiansToDegrees, which
// multiply by a constant: a decimal one of 34 digits for decimals, else a
// double.
func angleConversion(decimalFactor string, doubleFactor float64) func(bsoncore.Value) (bsoncore.Value, error) {
	return func(v bsoncore.Value) (bsoncore.Value, error) {
		if v.Type == bsoncore.TypeDecimal128 {
			f, _ := new(big.Float).SetPrec(floatPrec).SetString(decimalFactor)
			return decimalOf(v).mul(decimalFromBig(f, true)).value(), nil
		}
		return doubleValue(toFloat64(v) * doubleFactor), nil
	}
}
