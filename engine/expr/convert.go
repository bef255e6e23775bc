package expr

import (
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// convertExpr is $convert, and the shorthands $toInt, $toString and the
// rest, which have no onError or onNull.
type convertExpr struct {
	input, to       exprNode
	onError, onNull exprNode // nil when not given
}

func compileConvert(c *exprCompiler, _ string, args bsoncore.Value) (exprNode, error) {
	if args.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$convert expects an object of named arguments but found: %s", bsonvalue.TypeName(args.Type))
	}
	nodes, err := c.compileNamed(args.Data, []string{"input", "to", "onError", "onNull"},
		func(name string) error {
			return mongoerr.New(mongoerr.FailedToParse, "$convert found an unknown argument: %s", name)
		})
	switch {
	case err != nil:
		return nil, err
	case nodes[0] == nil:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'input' parameter to $convert")
	case nodes[1] == nil:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'to' parameter to $convert")
	}
	return &convertExpr{input: nodes[0], to: nodes[1], onError: nodes[2], onNull: nodes[3]}, nil
}

func compileConversion(to bsoncore.Type) exprOperator {
	return func(c *exprCompiler, name string, args bsoncore.Value) (exprNode, error) {
		nodes, err := c.args(args)
		if err != nil {
			return nil, err
		}
		if len(nodes) != 1 {
			return nil, mongoerr.New(50723, "%s requires a single argument, got %d", name, len(nodes))
		}
		return &convertExpr{input: nodes[0], to: literal{stringValue(bsonvalue.TypeName(to))}}, nil
	}
}

func (x *convertExpr) eval(e *env) (bsoncore.Value, error) {
	to, err := x.to.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	in, err := x.input.eval(e)
	if err != nil {
		return bsonvalue.Missing, err
	}
	var target bsoncore.Type
	if !isNullish(to) {
		if target, err = targetType(to); err != nil {
			return bsonvalue.Missing, err
		}
	}
	switch {
	case isNullish(in) && x.onNull != nil:
		return x.onNull.eval(e)
	case isNullish(in) || isNullish(to):
		return bsonvalue.Null, nil
	}
	out, err := convert(in, target)
	if mongoerr.CodeOf(err) == mongoerr.ConversionFailure && x.onError != nil {
		return x.onError.eval(e)
	}
	return out, err
}

// targetType reads the to argument of $convert: a type name, "missing"
// included, or a type number.
func targetType(to bsoncore.Value) (bsoncore.Type, error) {
	if to.Type == bsoncore.TypeString {
		name := stringOf(to)
		if name == "missing" {
			return 0, nil
		}
		t, ok := bsonvalue.TypeByAlias(name)
		if !ok {
			return 0, mongoerr.New(mongoerr.BadValue, "Unknown type name: %s", name)
		}
		return t, nil
	}
	if !to.IsNumber() {
		return 0, mongoerr.New(mongoerr.FailedToParse, "$convert's 'to' argument must be a string or number, but is %s", bsonvalue.TypeName(to.Type))
	}
	n, ok := int32Arg(to)
	if !ok {
		return 0, mongoerr.New(mongoerr.FailedToParse, "In $convert, numeric 'to' argument is not an integer")
	}
	if t := bsoncore.Type(n); int(int8(t)) == n {
		if _, ok := bsonvalue.TypeByAlias(bsonvalue.TypeName(t)); ok {
			return t, nil
		}
	}
	return 0, mongoerr.New(mongoerr.FailedToParse, "In $convert, numeric value for 'to' does not correspond to a BSON type: %d", n)
}

// conversionFailure is a failure of $convert, which MongoDB words as what
// failed, then the words naming $convert, then any detail.
func conversionFailure(what, detail string) error {
	if detail != "" {
		detail = ": " + detail
	}
	return mongoerr.New(mongoerr.ConversionFailure, "%s in $convert with no onError value%s", what, detail)
}

// convert converts a value that is not null to another type, by MongoDB's
// table of conversions.
func convert(v bsoncore.Value, to bsoncore.Type) (bsoncore.Value, error) {
	if v.Type == to {
		switch to {
		case bsoncore.TypeDouble, bsoncore.TypeString, bsoncore.TypeObjectID, bsoncore.TypeBoolean,
			bsoncore.TypeDateTime, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
			return v, nil
		}
	}
	switch to {
	case bsoncore.TypeBoolean:
		return toBool(v)
	case bsoncore.TypeString:
		return toString(v)
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return toInteger(v, to)
	case bsoncore.TypeDouble:
		return toDouble(v)
	case bsoncore.TypeDecimal128:
		return toDecimal(v)
	case bsoncore.TypeDateTime:
		return toDate(v)
	case bsoncore.TypeObjectID:
		if v.Type == bsoncore.TypeString {
			return parseObjectID(stringOf(v))
		}
	}
	return bsonvalue.Missing, unsupportedConversion(v.Type, to)
}

func unsupportedConversion(from, to bsoncore.Type) error {
	return conversionFailure("Unsupported conversion from "+bsonvalue.TypeName(from)+" to "+bsonvalue.TypeName(to), "")
}

func toBool(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return boolValue(f != 0), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDecimal128:
		return boolValue(bsonvalue.Truthy(v)), nil
	case bsoncore.TypeString, bsoncore.TypeObjectID, bsoncore.TypeDateTime, bsoncore.TypeEmbeddedDocument,
		bsoncore.TypeArray, bsoncore.TypeBinary, bsoncore.TypeRegex, bsoncore.TypeDBPointer, bsoncore.TypeJavaScript,
		bsoncore.TypeSymbol, bsoncore.TypeCodeWithScope, bsoncore.TypeTimestamp, bsoncore.TypeMinKey, bsoncore.TypeMaxKey:
		return boolValue(true), nil
	}
	return bsonvalue.Missing, unsupportedConversion(v.Type, bsoncore.TypeBoolean)
}

func toString(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return stringValue(formatDouble(f)), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return stringValue(strconv.FormatInt(toInt64(v), 10)), nil
	case bsoncore.TypeDecimal128:
		return stringValue(decimalString(v)), nil
	case bsoncore.TypeBoolean:
		return stringValue(strconv.FormatBool(bsonvalue.Truthy(v))), nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return stringValue(formatDate(ms)), nil
	case bsoncore.TypeObjectID:
		oid, _ := v.ObjectIDOK()
		return stringValue(bson.ObjectID(oid).Hex()), nil
	}
	return bsonvalue.Missing, unsupportedConversion(v.Type, bsoncore.TypeString)
}

// formatDouble writes a double as $toString does: the shortest digits
// that read back the same, in fixed notation for exponents from -4 to 15
// and scientific notation otherwise.
func formatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, exponent, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(exponent)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		digits := strconv.Itoa(exp)
		if len(digits) < 2 {
			digits = "0" + digits
		}
		return mantissa + "e" + sign + digits
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func toInteger(v bsoncore.Value, to bsoncore.Type) (bsoncore.Value, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if to == bsoncore.TypeInt32 {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	var n int64
	switch v.Type {
	case bsoncore.TypeBoolean:
		n = 0
		if bsonvalue.Truthy(v) {
			n = 1
		}
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n = toInt64(v)
		if n < lo || n > hi {
			return bsonvalue.Missing, conversionFailure("Conversion would overflow target type", "")
		}
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		switch {
		case math.IsNaN(f):
			return bsonvalue.Missing, conversionFailure("Attempt to convert NaN value to integer type", "")
		case math.IsInf(f, 0):
			return bsonvalue.Missing, conversionFailure("Attempt to convert infinity value to integer type", "")
		case to == bsoncore.TypeInt32 && (f < math.MinInt32 || f > math.MaxInt32), f < -0x1p63 || f >= 0x1p63:
			return bsonvalue.Missing, conversionFailure("Conversion would overflow target type", bsonvalue.FormatDouble(f))
		}
		n = int64(f)
	case bsoncore.TypeDecimal128:
		d := decimalOf(v)
		switch d.form {
		case notANumber:
			return bsonvalue.Missing, conversionFailure("Attempt to convert NaN value to integer type", "")
		case infinite:
			return bsonvalue.Missing, conversionFailure("Attempt to convert infinity value to integer type", "")
		}
		var ok bool
		if n, ok = d.int64(roundTowardZero); !ok || n < lo || n > hi {
			return bsonvalue.Missing, conversionFailure("Conversion would overflow target type", decimalString(v))
		}
	case bsoncore.TypeString:
		return parseInteger(stringOf(v), to)
	case bsoncore.TypeDateTime:
		if to == bsoncore.TypeInt32 {
			return bsonvalue.Missing, unsupportedConversion(v.Type, to)
		}
		n, _ = v.DateTimeOK()
	default:
		return bsonvalue.Missing, unsupportedConversion(v.Type, to)
	}
	if to == bsoncore.TypeInt32 {
		return int32Value(int32(n)), nil
	}
	return int64Value(n), nil
}

// parseInteger reads a string of decimal digits, with an optional sign.
func parseInteger(s string, to bsoncore.Type) (bsoncore.Value, error) {
	if strings.HasPrefix(s, "0x") {
		return bsonvalue.Missing, conversionFailure("Illegal hexadecimal input", s)
	}
	bits := 64
	if to == bsoncore.TypeInt32 {
		bits = 32
	}
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return bsonvalue.Missing, parseFailure(s, err)
	}
	if to == bsoncore.TypeInt32 {
		return int32Value(int32(n)), nil
	}
	return int64Value(n), nil
}

// parseFailure reports a string $convert cannot read as a number.
func parseFailure(s string, err error) error {
	reason := "Did not consume whole string."
	if errors.Is(err, strconv.ErrRange) {
		reason = "Overflow"
	}
	return conversionFailure("Failed to parse number '"+s+"'", reason)
}

func toDouble(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		if bsonvalue.Truthy(v) {
			return doubleValue(1), nil
		}
		return doubleValue(0), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return doubleValue(float64(toInt64(v))), nil
	case bsoncore.TypeDecimal128:
		f, ok := decimalOf(v).float64()
		if !ok {
			return bsonvalue.Missing, conversionFailure("Conversion would overflow target type", decimalString(v))
		}
		return doubleValue(f), nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return doubleValue(float64(ms)), nil
	case bsoncore.TypeString:
		s := stringOf(v)
		if strings.HasPrefix(s, "0x") {
			return bsonvalue.Missing, conversionFailure("Illegal hexadecimal input", s)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !math.IsInf(f, 0) {
			return bsonvalue.Missing, parseFailure(s, err)
		}
		return doubleValue(f), nil
	}
	return bsonvalue.Missing, unsupportedConversion(v.Type, bsoncore.TypeDouble)
}

func toDecimal(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		if bsonvalue.Truthy(v) {
			return decimalFromInt(1).value(), nil
		}
		return decimalFromInt(0).value(), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		return decimalOf(v).value(), nil
	case bsoncore.TypeDateTime:
		ms, _ := v.DateTimeOK()
		return decimalFromInt(ms).value(), nil
	case bsoncore.TypeString:
		s := stringOf(v)
		if strings.HasPrefix(s, "0x") {
			return bsonvalue.Missing, conversionFailure("Illegal hexadecimal input", s)
		}
		d, err := bson.ParseDecimal128(s)
		if err != nil {
			return bsonvalue.Missing, parseFailure(s, err)
		}
		hi, lo := d.GetBytes()
		return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}, nil
	}
	return bsonvalue.Missing, unsupportedConversion(v.Type, bsoncore.TypeDecimal128)
}

// dateLayouts are the date strings $toDate reads: ISO 8601 dates, with or
// without a time, fraction and zone.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

func toDate(v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeInt64:
		return dateValue(toInt64(v)), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		n, err := toInteger(v, bsoncore.TypeInt64)
		if err != nil {
			return bsonvalue.Missing, err
		}
		return dateValue(toInt64(n)), nil
	case bsoncore.TypeObjectID:
		oid, _ := v.ObjectIDOK()
		return dateValue(bson.ObjectID(oid).Timestamp().UnixMilli()), nil
	case bsoncore.TypeTimestamp:
		t, _, _ := v.TimestampOK()
		return dateValue(int64(t) * 1000), nil
	case bsoncore.TypeString:
		s := stringOf(v)
		for _, layout := range dateLayouts {
			if t, err := time.Parse(layout, s); err == nil {
				return dateValue(t.UnixMilli()), nil
			}
		}
		return bsonvalue.Missing, mongoerr.New(mongoerr.ConversionFailure, "Error parsing date string '%s'", s)
	}
	return bsonvalue.Missing, unsupportedConversion(v.Type, bsoncore.TypeDateTime)
}

func parseObjectID(s string) (bsoncore.Value, error) {
	if len(s) != 24 {
		return bsonvalue.Missing, conversionFailure("Failed to parse objectId '"+s+"'", "Invalid string length for parsing to OID, expected 24 but found "+strconv.Itoa(len(s)))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return bsonvalue.Missing, conversionFailure("Failed to parse objectId '"+s+"'", "Invalid character found in hex string")
	}
	var oid bson.ObjectID
	copy(oid[:], b)
	return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, oid)}, nil
}
