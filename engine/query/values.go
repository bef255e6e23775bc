package query

import (
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// missing stands for a path that reaches no value. Its Type is zero, which no
// real BSON value has.
var missing bsoncore.Value

// elements iterates over the elements of a document or array without copying
// them. It stops at the end or at the first element it cannot read, so a
// malformed document reads as a shorter one instead of causing a panic.
type elements struct {
	rest []byte
}

func elementsOf(container []byte) elements {
	n, body, ok := bsoncore.ReadLength(container)
	if !ok || n < 5 || int(n) > len(container) {
		return elements{}
	}
	return elements{rest: body[:n-5]}
}

// next returns the next element's name and value, or ok == false at the end.
func (it *elements) next() (name []byte, v bsoncore.Value, ok bool) {
	t, rest, ok := bsoncore.ReadType(it.rest)
	if ok {
		name, rest, ok = bsoncore.ReadKeyBytes(rest)
	}
	if ok {
		v, rest, ok = bsoncore.ReadValue(rest, t)
	}
	if !ok {
		it.rest = nil
		return nil, missing, false
	}
	it.rest = rest
	return name, v, true
}

// lookup returns the value of the first field of doc named key.
func lookup(doc []byte, key string) (bsoncore.Value, bool) {
	it := elementsOf(doc)
	for {
		name, v, ok := it.next()
		if !ok {
			return missing, false
		}
		if string(name) == key {
			return v, true
		}
	}
}

// firstKey returns the name of the first field of doc, or "" if it is empty.
func firstKey(doc []byte) string {
	it := elementsOf(doc)
	name, _, _ := it.next()
	return string(name)
}

// isEmptyContainer reports whether a document or array has no elements.
func isEmptyContainer(container []byte) bool {
	it := elementsOf(container)
	_, _, ok := it.next()
	return !ok
}

// isContainer reports whether v is a document or an array: both are BSON
// documents underneath, which some operators rely on.
func isContainer(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray
}

// isNaN reports whether v is a double or decimal NaN.
func isNaN(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return math.IsNaN(f)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		return bson.NewDecimal128(hi, lo).IsNaN()
	}
	return false
}

// isInfinite reports whether v is a double or decimal infinity.
func isInfinite(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return math.IsInf(f, 0)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		return bson.NewDecimal128(hi, lo).IsInf() != 0
	}
	return false
}

// truthy is MongoDB's truth value of a BSON value: false, zero, null,
// undefined and missing are false, everything else (even "" and []) is true.
func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		b, _ := v.BooleanOK()
		return b
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		return i != 0
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return i != 0
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return f != 0
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		return !bson.NewDecimal128(hi, lo).IsZero()
	}
	return true
}

// integerValue returns the value of a number that is a whole number within
// the int64 range. Doubles and decimals with a fraction, NaN, infinities and
// values out of range report ok == false.
func integerValue(v bsoncore.Value) (n int64, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, ok := v.Int32OK()
		return int64(i), ok
	case bsoncore.TypeInt64:
		return v.Int64OK()
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		if f != math.Trunc(f) || f < -0x1p63 || f >= 0x1p63 {
			return 0, false
		}
		return int64(f), true
	case bsoncore.TypeDecimal128:
		r, ok := decimalRat(v)
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return 0, false
		}
		return r.Num().Int64(), true
	}
	return 0, false
}

// truncatedValue returns a number rounded toward zero and clamped to the
// int64 range, as $mod reads its operands. NaN reports ok == false.
func truncatedValue(v bsoncore.Value) (n int64, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return integerValue(v)
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return clampToInt64(f)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		d := bson.NewDecimal128(hi, lo)
		if d.IsNaN() {
			return 0, false
		}
		if inf := d.IsInf(); inf != 0 {
			return clampToInt64(math.Inf(inf))
		}
		r, _ := decimalRat(v)
		q := new(big.Int).Quo(r.Num(), r.Denom())
		if !q.IsInt64() {
			return clampToInt64(float64(q.Sign()) * math.Inf(1))
		}
		return q.Int64(), true
	}
	return 0, false
}

func clampToInt64(f float64) (int64, bool) {
	switch {
	case math.IsNaN(f):
		return 0, false
	case f >= 0x1p63:
		return math.MaxInt64, true
	case f < -0x1p63:
		return math.MinInt64, true
	}
	return int64(f), true
}

// decimalRat returns the value of a finite decimal128.
func decimalRat(v bsoncore.Value) (*big.Rat, bool) {
	hi, lo, _ := v.Decimal128OK()
	d := bson.NewDecimal128(hi, lo)
	if d.IsNaN() || d.IsInf() != 0 {
		return nil, false
	}
	coef, exp, err := d.BigInt()
	if err != nil {
		return nil, false
	}
	r := new(big.Rat).SetInt(coef)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
	if exp >= 0 {
		return r.Mul(r, new(big.Rat).SetInt(scale)), true
	}
	return r.Quo(r, new(big.Rat).SetInt(scale)), true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// sameRegex reports whether v is a regular expression value equal to the
// pattern and options given.
func sameRegex(v bsoncore.Value, pattern, options string) bool {
	p, o, ok := v.RegexOK()
	return ok && p == pattern && o == options
}

// stringBytes returns the text of a string or symbol value without copying
// it, where the bsoncore accessors would allocate a string.
func stringBytes(v bsoncore.Value) ([]byte, bool) {
	if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeSymbol {
		return nil, false
	}
	n, body, ok := bsoncore.ReadLength(v.Data)
	if !ok || n < 1 || int(n) > len(body) {
		return nil, false
	}
	return body[:n-1], true
}
