package bsonvalue

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// Missing stands for a path that reaches no value. Its Type is zero, which no
// real BSON value has.
var Missing bsoncore.Value

// Null and Undefined are the BSON null and undefined values.
var (
	Null      = bsoncore.Value{Type: bsoncore.TypeNull}
	Undefined = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// Elements iterates over the Elements of a document or array without copying
// them. It stops at the end or at the first element it cannot read, so a
// malformed document reads as a shorter one instead of causing a panic.
type Elements struct {
	rest []byte
}

func ElementsOf(container []byte) Elements {
	n, body, ok := bsoncore.ReadLength(container)
	if !ok || n < 5 || int(n) > len(container) {
		return Elements{}
	}
	return Elements{rest: body[:n-5]}
}

// Next returns the Next element's name and value, or ok == false at the end.
func (it *Elements) Next() (name []byte, v bsoncore.Value, ok bool) {
	t, rest, ok := bsoncore.ReadType(it.rest)
	if ok {
		name, rest, ok = bsoncore.ReadKeyBytes(rest)
	}
	if ok {
		v, rest, ok = bsoncore.ReadValue(rest, t)
	}
	if !ok {
		it.rest = nil
		return nil, Missing, false
	}
	it.rest = rest
	return name, v, true
}

// Lookup returns the value of the first field of doc named key.
func Lookup(doc []byte, key string) (bsoncore.Value, bool) {
	it := ElementsOf(doc)
	for {
		name, v, ok := it.Next()
		if !ok {
			return Missing, false
		}
		if string(name) == key {
			return v, true
		}
	}
}

// FirstKey returns the name of the first field of doc, or "" if it is empty.
func FirstKey(doc []byte) string {
	it := ElementsOf(doc)
	name, _, _ := it.Next()
	return string(name)
}

// Truthy is MongoDB's truth value of a BSON value: false, zero, null,
// undefined and Missing are false, everything else (even "" and []) is true.
func Truthy(v bsoncore.Value) bool {
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
		return !decimalIsZero(hi, lo)
	}
	return true
}

// decimalIsZero reports whether a decimal128 is zero in value, with any
// exponent and sign (0, 0.00, -0E+5). bson.Decimal128's IsZero reports
// only the all-zero encoding, which is 0E-6176.
func decimalIsZero(hi, lo uint64) bool {
	switch {
	case hi&(0xf<<59) == 0xf<<59: // infinity or NaN
		return false
	case hi&(3<<61) == 3<<61: // a coefficient past 10^34, which counts as zero
		return true
	}
	return hi&(1<<49-1) == 0 && lo == 0
}

// IntegerValue returns the value of a number that is a whole number within
// the int64 range. Doubles and decimals with a fraction, NaN, infinities and
// values out of range report ok == false.
func IntegerValue(v bsoncore.Value) (n int64, ok bool) {
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
		r, ok := DecimalRat(v)
		if !ok || !r.IsInt() || !r.Num().IsInt64() {
			return 0, false
		}
		return r.Num().Int64(), true
	}
	return 0, false
}

func ClampToInt64(f float64) (int64, bool) {
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

// DecimalRat returns the value of a finite decimal128.
func DecimalRat(v bsoncore.Value) (*big.Rat, bool) {
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

// StringBytes returns the text of a string or symbol value without copying
// it, where the bsoncore accessors would allocate a string.
func StringBytes(v bsoncore.Value) ([]byte, bool) {
	if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeSymbol {
		return nil, false
	}
	n, body, ok := bsoncore.ReadLength(v.Data)
	if !ok || n < 1 || int(n) > len(body) {
		return nil, false
	}
	return body[:n-1], true
}

// CheckFieldName checks one component of a field path, or a field name of
// a document expression.
func CheckFieldName(name string) error {
	switch {
	case name == "":
		return mongoerr.New(15998, "FieldPath field names may not be empty strings.")
	case strings.HasPrefix(name, "$"):
		return mongoerr.New(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	case strings.ContainsRune(name, 0):
		return mongoerr.New(16411, "FieldPath field names may not contain '\\0'.")
	}
	return nil
}

// FirstKeyBytes is FirstKey pointing into doc, without a copy, for the
// request path (a command's name is its first field); nil if doc has no
// field or cannot be read.
func FirstKeyBytes(doc []byte) []byte {
	if len(doc) < 6 {
		return nil
	}
	key, _, ok := bsoncore.ReadKeyBytes(doc[5:])
	if !ok {
		return nil
	}
	return key
}

// FormatDouble formats f as mongod's messages print a double (a C++ stream
// or C's "%g"): six significant digits, and "nan", "inf", "-inf".
func FormatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
