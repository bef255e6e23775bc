package expr

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// MongoDB's codes for arithmetic errors that have no name.
const (
	codeModByZero        mongoerr.Code = 16610
	codeModType          mongoerr.Code = 16611
	codeAddTwoDates      mongoerr.Code = 16612
	codeAbsOverflow      mongoerr.Code = 28680
	codeAbsType          mongoerr.Code = 28765
	codeDecimalModByZero mongoerr.Code = 5733415
)

// widestNumeric is the type arithmetic on operands of types a and b
// computes in: int32 below int64 below double below decimal128.
func widestNumeric(a, b bsoncore.Type) bsoncore.Type {
	rank := func(t bsoncore.Type) int {
		switch t {
		case bsoncore.TypeInt32:
			return 1
		case bsoncore.TypeInt64:
			return 2
		case bsoncore.TypeDouble:
			return 3
		case bsoncore.TypeDecimal128:
			return 4
		}
		return 0
	}
	if rank(a) == 0 || rank(b) == 0 {
		return 0
	}
	if rank(a) > rank(b) {
		return a
	}
	return b
}

// toInt64 reads an int32 or int64 value.
func toInt64(v bsoncore.Value) int64 {
	if v.Type == bsoncore.TypeInt32 {
		i, _ := v.Int32OK()
		return int64(i)
	}
	i, _ := v.Int64OK()
	return i
}

// toFloat64 reads a number as a double, as MongoDB coerces it.
func toFloat64(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return f
	case bsoncore.TypeDecimal128:
		f, _ := decimalOf(v).float64()
		return f
	}
	return float64(toInt64(v))
}

// toTruncatedInt64 reads a number as an int64, dropping any fraction.
func toTruncatedInt64(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		n, _ := bsonvalue.ClampToInt64(math.Trunc(toFloat64(v)))
		return n
	}
	return toInt64(v)
}

// sum is the state of $add: totals kept in the narrowest type that holds
// the operands so far, and a date if one of them was a date.
type sum struct {
	widest bsoncore.Type
	i      int64
	f      float64
	d      decimal
	isDate bool
}

// addExpr is $add. It stops at the first null operand, as MongoDB does.
type addExpr []exprNode

func (x addExpr) eval(e *env) (bsoncore.Value, error) {
	s := sum{widest: bsoncore.TypeInt32}
	null, err := operands(e, x, func(v bsoncore.Value) error {
		if !v.IsNumber() && v.Type != bsoncore.TypeDateTime {
			return mongoerr.New(mongoerr.TypeMismatch, "$add only supports numeric or date types, not %s", bsonvalue.TypeName(v.Type))
		}
		return s.add(v)
	})
	if err != nil || null {
		return bsonvalue.Null, err
	}
	return s.value(), nil
}

func (s *sum) add(v bsoncore.Value) error {
	if v.Type == bsoncore.TypeDateTime {
		if s.isDate {
			return mongoerr.New(codeAddTwoDates, "only one date allowed in an $add expression")
		}
		before := s.value()
		s.i, s.isDate = 0, true
		if err := s.addToDate(before); err != nil {
			return err
		}
		ms, _ := v.DateTimeOK()
		v = int64Value(ms)
	}
	if s.isDate {
		return s.addToDate(v)
	}
	old := s.widest
	s.widest = widestNumeric(s.widest, v.Type)
	if old != s.widest {
		switch {
		case s.widest == bsoncore.TypeDouble:
			s.f = float64(s.i)
		case s.widest == bsoncore.TypeDecimal128 && old == bsoncore.TypeDouble:
			s.d = decimalFromFloat(s.f)
		case s.widest == bsoncore.TypeDecimal128:
			s.d = decimalFromInt(s.i)
		}
	}
	switch s.widest {
	case bsoncore.TypeDouble:
		s.f += toFloat64(v)
	case bsoncore.TypeDecimal128:
		s.d = s.d.add(decimalOf(v))
	default:
		n := toInt64(v)
		if total, ok := addInt64(s.i, n); ok {
			s.i = total
		} else {
			s.widest = bsoncore.TypeDouble
			s.f = float64(s.i) + float64(n)
		}
	}
	return nil
}

// addToDate adds a number to the milliseconds of the date total: doubles
// rounded half away from zero, decimals half to even.
func (s *sum) addToDate(v bsoncore.Value) error {
	var n int64
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if !(f >= -0x1p63 && f < 0x1p63) {
			return dateOverflow()
		}
		n = int64(math.Round(f))
	case bsoncore.TypeDecimal128:
		var ok bool
		if n, ok = decimalOf(v).int64(roundHalfEven); !ok {
			return dateOverflow()
		}
	default:
		n = toInt64(v)
	}
	total, ok := addInt64(s.i, n)
	if !ok {
		return dateOverflow()
	}
	s.i = total
	return nil
}

func dateOverflow() error { return mongoerr.New(mongoerr.Overflow, "date overflow") }

func (s *sum) value() bsoncore.Value {
	switch {
	case s.isDate:
		return dateValue(s.i)
	case s.widest == bsoncore.TypeInt64:
		return int64Value(s.i)
	case s.widest == bsoncore.TypeDouble:
		return doubleValue(s.f)
	case s.widest == bsoncore.TypeDecimal128:
		return s.d.value()
	}
	return intOrLong(s.i)
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

func subInt64(a, b int64) (int64, bool) {
	d := a - b
	return d, (d < a) == (b > 0)
}

func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	return p, p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
}

// multiplyExpr is $multiply. Like $add, it stops at the first null
// operand. The product of integers is kept as a double too, for when it
// overflows.
type multiplyExpr []exprNode

func (x multiplyExpr) eval(e *env) (bsoncore.Value, error) {
	widest := bsoncore.TypeInt32
	i, f := int64(1), 1.0
	var d decimal
	null, err := operands(e, x, func(v bsoncore.Value) error {
		if !v.IsNumber() {
			return mongoerr.New(mongoerr.TypeMismatch, "$multiply only supports numeric types, not %s", bsonvalue.TypeName(v.Type))
		}
		old := widest
		widest = widestNumeric(widest, v.Type)
		if widest == bsoncore.TypeDecimal128 {
			switch old {
			case bsoncore.TypeDouble:
				d = decimalFromFloat(f)
			case bsoncore.TypeInt32, bsoncore.TypeInt64:
				d = decimalFromInt(i)
			}
			d = d.mul(decimalOf(v))
			return nil
		}
		f *= toFloat64(v)
		if widest != bsoncore.TypeDouble {
			var ok bool
			if i, ok = mulInt64(i, toInt64(v)); !ok {
				widest = bsoncore.TypeDouble
			}
		}
		return nil
	})
	switch {
	case err != nil || null:
		return bsonvalue.Null, err
	case widest == bsoncore.TypeDouble:
		return doubleValue(f), nil
	case widest == bsoncore.TypeInt64:
		return int64Value(i), nil
	case widest == bsoncore.TypeDecimal128:
		return d.value(), nil
	}
	return intOrLong(i), nil
}

func subtract(v []bsoncore.Value) (bsoncore.Value, error) {
	a, b := v[0], v[1]
	switch widestNumeric(a.Type, b.Type) {
	case bsoncore.TypeDecimal128:
		return decimalOf(a).sub(decimalOf(b)).value(), nil
	case bsoncore.TypeDouble:
		return doubleValue(toFloat64(a) - toFloat64(b)), nil
	case bsoncore.TypeInt64:
		if d, ok := subInt64(toInt64(a), toInt64(b)); ok {
			return int64Value(d), nil
		}
		return doubleValue(toFloat64(a) - toFloat64(b)), nil
	case bsoncore.TypeInt32:
		return intOrLong(toInt64(a) - toInt64(b)), nil
	}
	switch {
	case isNullish(a) || isNullish(b):
		return bsonvalue.Null, nil
	case a.Type == bsoncore.TypeDateTime:
		return subtractFromDate(a, b)
	}
	return bsonvalue.Missing, mongoerr.New(mongoerr.TypeMismatch, "can't $subtract %s from %s", bsonvalue.TypeName(b.Type), bsonvalue.TypeName(a.Type))
}

func subtractFromDate(date, v bsoncore.Value) (bsoncore.Value, error) {
	ms, _ := date.DateTimeOK()
	var n int64
	switch v.Type {
	case bsoncore.TypeDateTime:
		other, _ := v.DateTimeOK()
		return int64Value(ms - other), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n = toInt64(v)
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if !(f >= -0x1p63 && f < 0x1p63) {
			return bsonvalue.Missing, dateOverflow()
		}
		n = int64(math.Round(f))
	case bsoncore.TypeDecimal128:
		var ok bool
		if n, ok = decimalOf(v).int64(roundHalfEven); !ok {
			return bsonvalue.Missing, dateOverflow()
		}
	default:
		return bsonvalue.Missing, mongoerr.New(mongoerr.TypeMismatch, "can't $subtract %s from Date", bsonvalue.TypeName(v.Type))
	}
	d, ok := subInt64(ms, n)
	if !ok {
		return bsonvalue.Missing, dateOverflow()
	}
	return dateValue(d), nil
}

func divide(v []bsoncore.Value) (bsoncore.Value, error) {
	a, b := v[0], v[1]
	switch {
	case a.IsNumber() && b.IsNumber():
		if a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128 {
			divisor := decimalOf(b)
			if divisor.isZero() {
				return bsonvalue.Missing, divideByZero()
			}
			return decimalOf(a).quo(divisor).value(), nil
		}
		if toFloat64(b) == 0 {
			return bsonvalue.Missing, divideByZero()
		}
		return doubleValue(toFloat64(a) / toFloat64(b)), nil
	case isNullish(a) || isNullish(b):
		return bsonvalue.Null, nil
	}
	return bsonvalue.Missing, mongoerr.New(mongoerr.TypeMismatch, "$divide only supports numeric types, not %s and %s", bsonvalue.TypeName(a.Type), bsonvalue.TypeName(b.Type))
}

func divideByZero() error { return mongoerr.New(mongoerr.BadValue, "can't $divide by zero") }

func mod(v []bsoncore.Value) (bsoncore.Value, error) {
	a, b := v[0], v[1]
	switch {
	case a.IsNumber() && b.IsNumber():
	case isNullish(a) || isNullish(b):
		return bsonvalue.Null, nil
	default:
		return bsonvalue.Missing, mongoerr.New(codeModType, "$mod only supports numeric types, not %s and %s", bsonvalue.TypeName(a.Type), bsonvalue.TypeName(b.Type))
	}
	switch widestNumeric(a.Type, b.Type) {
	case bsoncore.TypeDecimal128:
		divisor := decimalOf(b)
		if divisor.isZero() {
			return bsonvalue.Missing, mongoerr.New(codeDecimalModByZero, "can't $mod by zero")
		}
		return decimalOf(a).rem(divisor).value(), nil
	case bsoncore.TypeDouble:
		if toFloat64(b) == 0 {
			return bsonvalue.Missing, mongoerr.New(codeModByZero, "can't $mod by zero")
		}
		return doubleValue(math.Mod(toFloat64(a), toFloat64(b))), nil
	}
	x, y := toInt64(a), toInt64(b)
	if y == 0 {
		return bsonvalue.Missing, mongoerr.New(codeModByZero, "can't $mod by zero")
	}
	// Go defines MinInt64 % -1 as 0, which is what MongoDB returns too.
	if a.Type == bsoncore.TypeInt64 || b.Type == bsoncore.TypeInt64 {
		return int64Value(x % y), nil
	}
	return int32Value(int32(x % y)), nil
}

func absolute(v []bsoncore.Value) (bsoncore.Value, error) {
	a := v[0]
	switch {
	case isNullish(a):
		return bsonvalue.Null, nil
	case !a.IsNumber():
		return bsonvalue.Missing, mongoerr.New(codeAbsType, "$abs only supports numeric types, not %s", bsonvalue.TypeName(a.Type))
	case a.Type == bsoncore.TypeDouble:
		return doubleValue(math.Abs(toFloat64(a))), nil
	case a.Type == bsoncore.TypeDecimal128:
		return decimalOf(a).abs().value(), nil
	}
	n := toInt64(a)
	if n == math.MinInt64 {
		return bsonvalue.Missing, mongoerr.New(codeAbsOverflow, "can't take $abs of long long min")
	}
	if n < 0 {
		n = -n
	}
	if a.Type == bsoncore.TypeInt64 {
		return int64Value(n), nil
	}
	return intOrLong(n), nil
}
