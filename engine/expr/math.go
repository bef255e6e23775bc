package expr

import (
	"maps"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// MongoDB's codes for the rounding, logarithm, power and root operators.
const (
	codeNumericType    mongoerr.Code = 28765 // every operator of one numeric argument
	codeRoundType      mongoerr.Code = 51081
	codePlacesIntegral mongoerr.Code = 51082
	codePlacesRange    mongoerr.Code = 51083
	codeRoundInvalid   mongoerr.Code = 51080
	codeLnDomain       mongoerr.Code = 28766
	codeLogArgType     mongoerr.Code = 28756
	codeLogBaseType    mongoerr.Code = 28757
	codeLogArgDomain   mongoerr.Code = 28758
	codeLogBaseDomain  mongoerr.Code = 28759
	codeLog10Domain    mongoerr.Code = 28761
	codePowBaseType    mongoerr.Code = 28762
	codePowExpType     mongoerr.Code = 28763
	codePowZeroNeg     mongoerr.Code = 28764
	codeSqrtDomain     mongoerr.Code = 28714
	codeLongType       mongoerr.Code = 16004 // Value::coerceToLong of a non-number
	codeLongRange      mongoerr.Code = 31109 // Value::coerceToLong beyond a long
)

// Rounding toward the infinities, for $ceil and $floor on decimals.
const (
	roundCeiling rounding = iota + 16
	roundFloor
)

// numericSetArrayOperators gathers the families of math.go, trig.go,
// set.go, arrayn.go and arrayacc.go.
func numericSetArrayOperators() map[string]exprOperator {
	ops := mathOperators()
	for _, family := range []map[string]exprOperator{
		trigOperators(),
		setOperators(),
		arrayShapeOperators(),
		accumulatorExprOperators(),
	} {
		maps.Copy(ops, family)
	}
	return ops
}

func mathOperators() map[string]exprOperator {
	return map[string]exprOperator{
		"$round": ranged(1, 2, roundOrTrunc("$round", roundHalfEven)),
		"$trunc": ranged(1, 2, roundOrTrunc("$trunc", roundTowardZero)),
		"$ceil":  fixed(1, numericArg("$ceil", func(v bsoncore.Value) (bsoncore.Value, error) { return toIntegral(v, roundCeiling, math.Ceil), nil })),
		"$floor": fixed(1, numericArg("$floor", func(v bsoncore.Value) (bsoncore.Value, error) { return toIntegral(v, roundFloor, math.Floor), nil })),
		"$exp":   fixed(1, numericArg("$exp", expOf)),
		"$ln":    fixed(1, numericArg("$ln", lnOf)),
		"$log10": fixed(1, numericArg("$log10", log10Of)),
		"$sqrt":  fixed(1, numericArg("$sqrt", sqrtOf)),
		"$log":   fixed(2, logOf),
		"$pow":   fixed(2, pow),

		"$bitAnd": variadic(func(n []exprNode) exprNode { return &bitwiseExpr{"$bitAnd", n} }),
		"$bitOr":  variadic(func(n []exprNode) exprNode { return &bitwiseExpr{"$bitOr", n} }),
		"$bitXor": variadic(func(n []exprNode) exprNode { return &bitwiseExpr{"$bitXor", n} }),
		"$bitNot": fixed(1, bitNot),
	}
}

// numericArg makes the function of an operator of one numeric argument:
// null for null or missing, an error for anything but a number.
func numericArg(name string, fn func(bsoncore.Value) (bsoncore.Value, error)) func([]bsoncore.Value) (bsoncore.Value, error) {
	return func(v []bsoncore.Value) (bsoncore.Value, error) {
		switch {
		case isNullish(v[0]):
			return bsonvalue.Null, nil
		case !v[0].IsNumber():
			return bsonvalue.Missing, mongoerr.New(codeNumericType, "%s only supports numeric types, not %s", name, bsonvalue.TypeName(v[0].Type))
		}
		return fn(v[0])
	}
}

// decimalFromFloat34 converts a double to a decimal exactly enough to
// round it: to 34 significant digits, as MongoDB's $round and $trunc do,
// rather than the 15 of arithmetic.
func decimalFromFloat34(f float64) decimal {
	switch {
	case math.IsNaN(f):
		return decimal{form: notANumber}
	case math.IsInf(f, 0):
		return decimal{form: infinite, neg: f < 0}
	case f == 0:
		return decimal{neg: math.Signbit(f)}
	}
	s := strconv.FormatFloat(math.Abs(f), 'e', decimalDigits-1, 64)
	mantissa, exponent, _ := strings.Cut(s, "e")
	coef, _ := new(big.Int).SetString(strings.Replace(mantissa, ".", "", 1), 10)
	exp, _ := strconv.Atoi(exponent)
	return decimal{neg: f < 0, coef: coef, exp: exp - (decimalDigits - 1)}
}

// quantize rounds d to the exponent exp as IEEE 754 does: NaN when d is
// not finite or the coefficient would need more than 34 digits.
func (d decimal) quantize(exp int, mode rounding) decimal {
	if d.form != finite {
		return decimal{form: notANumber}
	}
	coef := d.c()
	if d.exp >= exp {
		coef = new(big.Int).Mul(coef, pow10(d.exp-exp))
	} else {
		div := pow10(exp - d.exp)
		q, r := new(big.Int).QuoRem(coef, div, new(big.Int))
		if r.Sign() != 0 {
			var up bool
			switch mode {
			case roundHalfEven:
				c := new(big.Int).Lsh(r, 1).Cmp(div)
				up = c > 0 || c == 0 && q.Bit(0) == 1
			case roundCeiling:
				up = !d.neg
			case roundFloor:
				up = d.neg
			}
			if up {
				q.Add(q, big.NewInt(1))
			}
		}
		coef = q
	}
	if numDigits(coef) > decimalDigits {
		return decimal{form: notANumber}
	}
	return decimal{neg: d.neg, coef: coef, exp: exp}
}

// roundTo is MongoDB's quantize for $round and $trunc: a number with more
// digits left of the point than 34 less the places has none to round, and
// comes back with all 34 digits rather than as quantize's NaN.
func (d decimal) roundTo(exp int, mode rounding) decimal {
	if d.form == finite && !d.isZero() && d.exp+numDigits(d.c())-1-exp > decimalDigits-1 {
		return d.padded()
	}
	return d.quantize(exp, mode)
}

// roundOrTrunc makes $round or $trunc: a number rounded to a number of
// decimal places in [-20, 100], negative ones rounding left of the point.
func roundOrTrunc(name string, mode rounding) func([]bsoncore.Value) (bsoncore.Value, error) {
	return func(v []bsoncore.Value) (bsoncore.Value, error) {
		num := v[0]
		switch {
		case isNullish(num):
			return bsonvalue.Null, nil
		case !num.IsNumber():
			return bsonvalue.Missing, mongoerr.New(codeRoundType, "%s only supports numeric types, not %s", name, bsonvalue.TypeName(num.Type))
		}
		places := int64(0)
		if len(v) > 1 {
			p := v[1]
			if isNullish(p) {
				return bsonvalue.Null, nil
			}
			// MongoDB reads the places as a long before it checks they are an
			// integer that fits an int.
			if _, err := coerceToLong(p); err != nil {
				return bsonvalue.Missing, err
			}
			i, ok := int32Arg(p)
			if !ok {
				return bsonvalue.Missing, mongoerr.New(codePlacesIntegral, "precision argument to  %s must be a integral value", name)
			}
			n := int64(i)
			if n < -20 || n > 100 {
				return bsonvalue.Missing, mongoerr.New(codePlacesRange, "cannot apply %s with precision value %d value must be in [-20, 100]", name, n)
			}
			places = n
		}
		exp := int(-places)
		switch num.Type {
		case bsoncore.TypeDecimal128:
			d := decimalOf(num)
			if d.form == infinite {
				return num, nil
			}
			return d.roundTo(exp, mode).value(), nil
		case bsoncore.TypeDouble:
			d := decimalFromFloat34(toFloat64(num))
			if d.form == infinite {
				return num, nil
			}
			f, _ := d.roundTo(exp, mode).float64()
			return doubleValue(f), nil
		}
		if places >= 0 {
			return num, nil
		}
		n := toInt64(num)
		r, ok := decimalFromInt(n).quantize(exp, mode).int64(roundTowardZero)
		if !ok {
			return bsonvalue.Missing, mongoerr.New(codeRoundInvalid, "invalid conversion from Decimal128 result in %s resulting from arguments: [%d, %d]", name, n, places)
		}
		if num.Type == bsoncore.TypeInt64 || r != int64(int32(r)) {
			return int64Value(r), nil
		}
		return int32Value(int32(r)), nil
	}
}

// toIntegral is $ceil or $floor: integers are already integral, doubles
// round with fn, and decimals round to exponent 0.
func toIntegral(v bsoncore.Value, mode rounding, fn func(float64) float64) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeDouble:
		return doubleValue(fn(toFloat64(v)))
	case bsoncore.TypeDecimal128:
		return decimalOf(v).quantize(0, mode).value()
	}
	return v
}

// isPositive reports whether a decimal is greater than zero.
func (d decimal) isPositive() bool {
	return d.form != notANumber && !d.neg && !d.isZero()
}

// transcendental applies f to a finite decimal, passing NaN through;
// mayBeExact is decimalFromBig's.
func (d decimal) transcendental(f func(*big.Float) *big.Float, mayBeExact bool) decimal {
	if d.form == notANumber {
		return d
	}
	return decimalFromBig(f(d.bigFloat()), mayBeExact)
}

func expOf(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type != bsoncore.TypeDecimal128 {
		return doubleValue(math.Exp(toFloat64(v))), nil
	}
	d := decimalOf(v)
	switch {
	case d.form == infinite && d.neg:
		return decimal{}.value(), nil
	case d.form != finite:
		return d.value(), nil
	case d.isZero():
		return decimalFromInt(1).value(), nil
	}
	return d.transcendental(floatExp, false).value(), nil
}

// decimalLog is the logarithm of a positive decimal in a positive base
// other than 1, given by its own logarithm; nil means base e.
func decimalLog(d decimal, lnBase *big.Float) decimal {
	if d.form == infinite {
		if lnBase != nil && lnBase.Sign() < 0 {
			return decimal{form: infinite, neg: true}
		}
		return d
	}
	// A logarithm in a base other than e is exact for powers of the base.
	return d.transcendental(func(x *big.Float) *big.Float {
		r := floatLn(x)
		if lnBase != nil {
			r.Quo(r, lnBase)
		}
		return r
	}, lnBase != nil)
}

// decimalLogBase is the logarithm of a positive decimal in a positive base
// other than 1, as MongoDB computes it: directly in bases 2 and 10, and
// else as the quotient of the natural logarithms, each first rounded to
// decimal128, so that log₈ 1 is 0E+33 and log₈ 64 is 2.000…000.
func decimalLogBase(x, base decimal) decimal {
	for _, b := range []int64{2, 10} {
		if base.form == finite && base.sub(decimalFromInt(b)).isZero() {
			return decimalLog(x, floatLn(floatOf(b)))
		}
	}
	lnBase := decimalLog(base, nil)
	if lnBase.isZero() {
		return decimal{form: notANumber}
	}
	return decimalLog(x, nil).quo(lnBase)
}

func lnOf(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type == bsoncore.TypeDecimal128 {
		if d := decimalOf(v); d.isPositive() {
			return decimalLog(d, nil).value(), nil
		}
	}
	x := toFloat64(v)
	if !(x > 0 || math.IsNaN(x)) {
		return bsonvalue.Missing, mongoerr.New(codeLnDomain, "$ln's argument must be a positive number, but is %s", bsonvalue.FormatDouble(x))
	}
	return doubleValue(math.Log(x)), nil
}

func log10Of(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type == bsoncore.TypeDecimal128 {
		if d := decimalOf(v); d.isPositive() {
			return decimalLog(d, floatLn(floatOf(10))).value(), nil
		}
	}
	x := toFloat64(v)
	if !(x > 0 || math.IsNaN(x)) {
		return bsonvalue.Missing, mongoerr.New(codeLog10Domain, "$log10's argument must be a positive number, but is %s", bsonvalue.FormatDouble(x))
	}
	return doubleValue(math.Log10(x)), nil
}

func logOf(v []bsoncore.Value) (bsoncore.Value, error) {
	arg, base := v[0], v[1]
	switch {
	case isNullish(arg) || isNullish(base):
		return bsonvalue.Null, nil
	case !arg.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codeLogArgType, "$log's argument must be numeric, not %s", bsonvalue.TypeName(arg.Type))
	case !base.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codeLogBaseType, "$log's base must be numeric, not %s", bsonvalue.TypeName(base.Type))
	}
	if arg.Type == bsoncore.TypeDecimal128 || base.Type == bsoncore.TypeDecimal128 {
		a, b := decimalOf(arg), decimalOf(base)
		one := decimalFromInt(1)
		if a.isPositive() && b.isPositive() && !(b.form == finite && b.sub(one).isZero()) {
			return decimalLogBase(a, b).value(), nil
		}
	}
	x, b := toFloat64(arg), toFloat64(base)
	if !(x > 0 || math.IsNaN(x)) {
		return bsonvalue.Missing, mongoerr.New(codeLogArgDomain, "$log's argument must be a positive number, but is %s", bsonvalue.FormatDouble(x))
	}
	if !(b > 0 && b != 1 || math.IsNaN(b)) {
		return bsonvalue.Missing, mongoerr.New(codeLogBaseDomain, "$log's base must be a positive number not equal to 1, but is %s", bsonvalue.FormatDouble(b))
	}
	return doubleValue(math.Log(x) / math.Log(b)), nil
}

func sqrtOf(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type == bsoncore.TypeDecimal128 {
		d := decimalOf(v)
		switch {
		case d.form != notANumber && d.neg && !d.isZero():
			return bsonvalue.Missing, mongoerr.New(codeSqrtDomain, "$sqrt's argument must be greater than or equal to 0")
		case d.form == finite && !d.isZero():
			return d.transcendental(floatSqrt, true).value(), nil
		}
		return d.value(), nil
	}
	x := toFloat64(v)
	if x < 0 {
		return bsonvalue.Missing, mongoerr.New(codeSqrtDomain, "$sqrt's argument must be greater than or equal to 0")
	}
	return doubleValue(math.Sqrt(x)), nil
}

// pow is $pow: a decimal if either operand is one, else a double if
// either is one, else an integer when the result fits the operands' type
// and a double when it does not.
func pow(v []bsoncore.Value) (bsoncore.Value, error) {
	base, exp := v[0], v[1]
	switch {
	case isNullish(base) || isNullish(exp):
		return bsonvalue.Null, nil
	case !base.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codePowBaseType, "$pow's base must be numeric, not %s", bsonvalue.TypeName(base.Type))
	case !exp.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codePowExpType, "$pow's exponent must be numeric, not %s", bsonvalue.TypeName(exp.Type))
	}
	zeroToNegative := mongoerr.New(codePowZeroNeg, "$pow cannot take a base of 0 and a negative exponent")
	if base.Type == bsoncore.TypeDecimal128 || exp.Type == bsoncore.TypeDecimal128 {
		b, e := decimalOf(base), decimalOf(exp)
		if b.isZero() && e.form != notANumber && e.neg && !e.isZero() {
			return bsonvalue.Missing, zeroToNegative
		}
		// MongoDB adds the zero of least exponent to the power, which
		// gives it all 34 digits: 1.5² is 2.250…0.
		return decimalPow(b, e).padded().value(), nil
	}
	x, y := toFloat64(base), toFloat64(exp)
	if x == 0 && y < 0 {
		return bsonvalue.Missing, zeroToNegative
	}
	if base.Type == bsoncore.TypeDouble || exp.Type == bsoncore.TypeDouble {
		return doubleValue(math.Pow(x, y)), nil
	}
	result := func(n int64) bsoncore.Value {
		if base.Type == bsoncore.TypeInt64 || exp.Type == bsoncore.TypeInt64 {
			return int64Value(n)
		}
		return intOrLong(n)
	}
	b, e := toInt64(base), toInt64(exp)
	switch {
	case b == 0 && e == 0 || b == 1:
		return result(1), nil
	case b == 0:
		return result(0), nil
	case b == -1 && e%2 == 0:
		return result(1), nil
	case b == -1:
		return result(-1), nil
	case e < 0 || e > 63:
		return doubleValue(math.Pow(x, y)), nil
	}
	// Repeated multiplication is exact where the double power is not.
	r := int64(1)
	for range e {
		var ok bool
		if r, ok = mulInt64(r, b); !ok {
			return doubleValue(math.Pow(x, y)), nil
		}
	}
	return result(r), nil
}

// padded is d plus 0E-6176: d with all 34 digits, or as many as the least
// exponent allows; a zero becomes 0E-6176.
func (d decimal) padded() decimal {
	if d.form != finite {
		return d
	}
	if d.isZero() {
		return decimal{exp: decimalMinExp}
	}
	k := min(decimalDigits-numDigits(d.c()), d.exp-decimalMinExp)
	if k <= 0 {
		return d
	}
	return decimal{neg: d.neg, coef: new(big.Int).Mul(d.c(), pow10(k)), exp: d.exp - k}
}

// decimalPow raises a decimal to a decimal power: exactly when the power
// is a modest integer, else through logarithms.
func decimalPow(b, e decimal) decimal {
	one := decimalFromInt(1)
	switch {
	case e.isZero() || b.form == finite && !b.neg && b.sub(one).isZero():
		return one
	case b.form == notANumber || e.form == notANumber:
		return decimal{form: notANumber}
	case b.form == infinite || e.form == infinite:
		// The limits are those of the double power.
		bf, _ := b.float64()
		ef, _ := e.float64()
		return decimalFromFloat(math.Pow(bf, ef))
	}
	n, ok := e.int64(roundTowardZero)
	integral := ok && e.sub(decimalFromInt(n)).isZero()
	if integral && n >= -1000 && n <= 1000 {
		k := abs(int(n))
		r := decimal{neg: b.neg && k%2 == 1, coef: new(big.Int).Exp(b.c(), big.NewInt(int64(k)), nil), exp: b.exp * k}
		if n < 0 {
			return one.quo(r)
		}
		return r.round()
	}
	switch {
	case b.isZero():
		return decimal{}
	case b.neg && !integral:
		return decimal{form: notANumber}
	}
	r := decimalFromBig(floatExp(newFloat().Mul(e.bigFloat(), floatLn(b.abs().bigFloat()))), true)
	if b.neg && n%2 != 0 {
		r = r.negate()
	}
	return r
}

// bitwiseExpr is $bitAnd, $bitOr or $bitXor over ints and longs: a long
// if any operand is one, else an int.
type bitwiseExpr struct {
	name string
	args []exprNode
}

func (x *bitwiseExpr) eval(e *env) (bsoncore.Value, error) {
	var acc int64
	if x.name == "$bitAnd" {
		acc = -1
	}
	long := false
	null, err := operands(e, x.args, func(v bsoncore.Value) error {
		switch v.Type {
		case bsoncore.TypeInt64:
			long = true
		case bsoncore.TypeInt32:
		default:
			return mongoerr.New(mongoerr.TypeMismatch, "%s only supports int and long operands, not %s", x.name, bsonvalue.TypeName(v.Type))
		}
		n := toInt64(v)
		switch x.name {
		case "$bitAnd":
			acc &= n
		case "$bitOr":
			acc |= n
		default:
			acc ^= n
		}
		return nil
	})
	switch {
	case err != nil || null:
		return bsonvalue.Null, err
	case long:
		return int64Value(acc), nil
	}
	return int32Value(int32(acc)), nil
}

func bitNot(v []bsoncore.Value) (bsoncore.Value, error) {
	switch v[0].Type {
	case bsoncore.TypeInt32:
		return int32Value(^int32(toInt64(v[0]))), nil
	case bsoncore.TypeInt64:
		return int64Value(^toInt64(v[0])), nil
	}
	if isNullish(v[0]) {
		return bsonvalue.Null, nil
	}
	return bsonvalue.Missing, mongoerr.New(mongoerr.TypeMismatch, "$bitNot only supports int and long, not: %s", bsonvalue.TypeName(v[0].Type))
}

// coerceToLong reads a number as MongoDB's Value::coerceToLong does,
// truncating a fraction, and fails as it does for other types and for
// numbers beyond the range of a long.
func coerceToLong(v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return toInt64(v), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := toFloat64(v)
		if !(f >= -0x1p63 && f < 0x1p63) {
			return 0, mongoerr.New(codeLongRange, "Can't coerce out of range value %s to long", bsonvalue.FormatDouble(f))
		}
		return int64(f), nil
	}
	return 0, mongoerr.New(codeLongType, "can't convert from BSON type %s to long", bsonvalue.TypeName(v.Type))
}
