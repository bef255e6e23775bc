package command

import (
	"bytes"
	"iter"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// Command arguments. A handler ranges over Args, switches on the key and
// converts each value with a getter (String, Int64, Bool, Doc, ...); the
// getters fail the way MongoDB's command parsers do, naming the field as
// "<command>.<field>":
//
//	for key, v := range command.Args(req.Body) {
//		switch string(key) {
//		case "limit":
//			limit, err = command.Int64("find", "limit", v)
//		default:
//			err = command.UnknownField("find", key)
//		}
//		...
//	}

// Error codes of MongoDB's generated command parsers, which have no names.
const (
	CodeMissingField mongoerr.Code = 40414
	CodeUnknownField mongoerr.Code = 40415
	// CodeOutOfRange is a value outside the range a field's validator allows.
	CodeOutOfRange mongoerr.Code = 51024
)

// Args yields the fields of a command document after the command name,
// leaving out the generic arguments any driver may add to any command (see
// isGenericArg). Keys point into body; switching on string(key) does not
// allocate.
func Args(body bson.Raw) iter.Seq2[[]byte, bson.RawValue] {
	return func(yield func([]byte, bson.RawValue) bool) {
		first := true
		for key, v := range Fields(body) {
			if first {
				first = false
				continue
			}
			if !isGenericArg(key) && !yield(key, v) {
				return
			}
		}
	}
}

// Fields yields every field of doc, such as an options document of a
// command; keys point into doc.
func Fields(doc bson.Raw) iter.Seq2[[]byte, bson.RawValue] {
	return func(yield func([]byte, bson.RawValue) bool) {
		if len(doc) < 5 {
			return
		}
		rest := []byte(doc[4 : len(doc)-1])
		for len(rest) > 0 {
			elem, tail, ok := bsoncore.ReadElement(rest)
			if !ok {
				return // the wire layer validated the document
			}
			rest = tail
			// ReadElement has found the key's end and the value's
			// length: the element is its type, key, NUL and value.
			// Element.KeyBytes and Element.Value would each find the
			// key's end again, and Value the length too.
			k := bytes.IndexByte(elem[1:], 0)
			if !yield(elem[1:1+k], bson.RawValue{Type: bson.Type(elem[0]), Value: elem[2+k:]}) {
				return
			}
		}
	}
}

// FirstValue is the value of a command's first field: the argument of
// the command's name, such as the collection of find.
func FirstValue(body bson.Raw) bson.RawValue {
	for _, v := range Fields(body) {
		return v
	}
	return bson.RawValue{}
}

// Name is the command's name, its first field's key.
func Name(body bson.Raw) string {
	for key := range Fields(body) {
		return string(key)
	}
	return ""
}

// CollectionArg reads the command's first value as a collection name,
// which the caller then validates (engine.ValidateNamespace).
func CollectionArg(req *Request) (string, error) {
	v := FirstValue(req.Body)
	name, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "collection name has invalid type %s", TypeName(v.Type))
	}
	return name, nil
}

// isGenericArg reports whether key is one of the arguments that drivers and
// routers may attach to every command, which no command rejects as unknown.
func isGenericArg(key []byte) bool {
	switch string(key) {
	case "$db", "lsid", "txnNumber", "autocommit", "startTransaction", "stmtId",
		"$clusterTime", "$readPreference", "readConcern", "writeConcern",
		"comment", "maxTimeMS", "apiVersion", "apiStrict", "apiDeprecationErrors",
		"$client", "$audit", "$configServerState", "$configTime", "$topologyTime",
		"clientOperationKey", "txnRetryCounter", "databaseVersion", "shardVersion",
		"allowImplicitCollectionCreation", "mayBypassWriteBlocking", "$queryOptions":
		return true
	}
	return false
}

// UnknownField is the error for an argument the command does not take.
func UnknownField(cmd string, key []byte) error {
	return mongoerr.New(CodeUnknownField, "BSON field '%s.%s' is an unknown field.", cmd, key)
}

// MissingField is the error for a required argument that is absent.
func MissingField(cmd, field string) error {
	return mongoerr.New(CodeMissingField, "BSON field '%s.%s' is missing but a required field", cmd, field)
}

// WrongType is the TypeMismatch error for an argument of the wrong BSON type.
// expected lists MongoDB's type names, as in "long", "int", "object".
func WrongType(cmd, field string, got bson.Type, expected ...string) error {
	if len(expected) == 1 {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type '%s'",
			cmd, field, TypeName(got), expected[0])
	}
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[%s]'",
		cmd, field, TypeName(got), strings.Join(expected, ", "))
}

var numberTypes = []string{"long", "int", "decimal", "double"}

// String returns a string argument.
func String(cmd, field string, v bson.RawValue) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", WrongType(cmd, field, v.Type, "string")
	}
	return s, nil
}

// Int64 returns a numeric argument as an integer: any numeric type is
// accepted, fractions are truncated toward zero, values beyond the int64
// range saturate and NaN is 0, like MongoDB's parsers for integer fields.
func Int64(cmd, field string, v bson.RawValue) (int64, error) {
	switch v.Type {
	case bson.TypeInt32:
		return int64(v.Int32()), nil
	case bson.TypeInt64:
		return v.Int64(), nil
	case bson.TypeDouble:
		return SaturatingInt64(v.Double()), nil
	case bson.TypeDecimal128:
		return SaturatingInt64(DecimalToFloat(v.Decimal128())), nil
	}
	return 0, WrongType(cmd, field, v.Type, numberTypes...)
}

// Int32 is Int64 for fields that must fit an int32; a value outside
// that range is BadValue.
func Int32(cmd, field string, v bson.RawValue) (int32, error) {
	n, err := Int64(cmd, field, v)
	if err != nil {
		return 0, err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, mongoerr.New(mongoerr.BadValue, "BSON field '%s.%s' value %d is out of range for a 32-bit integer", cmd, field, n)
	}
	return int32(n), nil
}

// Float64 returns any numeric argument as a float64.
func Float64(cmd, field string, v bson.RawValue) (float64, error) {
	if f, ok := v.AsFloat64OK(); ok {
		return f, nil
	}
	if d, ok := v.Decimal128OK(); ok {
		return DecimalToFloat(d), nil
	}
	return 0, WrongType(cmd, field, v.Type, numberTypes...)
}

// Bool returns a boolean argument. Like MongoDB, numbers are accepted
// too, and any non-zero number is true.
func Bool(cmd, field string, v bson.RawValue) (bool, error) {
	switch v.Type {
	case bson.TypeBoolean:
		return v.Boolean(), nil
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		f, err := Float64(cmd, field, v)
		return f != 0, err
	}
	return false, WrongType(cmd, field, v.Type, "bool", "long", "int", "decimal", "double")
}

// NonNegative is Int64 for the counts of find and aggregate (skip,
// limit, batchSize), which MongoDB validates as ">= 0".
func NonNegative(cmd, field string, v bson.RawValue) (int64, error) {
	n, err := Int64(cmd, field, v)
	if err == nil && n < 0 {
		err = mongoerr.New(CodeOutOfRange, "BSON field '%s' value must be >= 0, actual value '%d'", field, n)
	}
	return n, err
}

// StrictBool returns an option of find or aggregate that must be a BSON
// boolean: unlike Bool, numbers are refused, as MongoDB's parser for
// these options does.
func StrictBool(field string, v bson.RawValue) (bool, error) {
	b, ok := v.BooleanOK()
	if !ok {
		return false, mongoerr.New(mongoerr.TypeMismatch, "Field '%s' should be a boolean value, but found: %s", field, TypeName(v.Type))
	}
	return b, nil
}

// Object returns a find option that must be a document (filter, sort,
// projection, min, max, let), failing with the wording of MongoDB's find
// parser, which has no space after the field name.
func Object(field string, v bson.RawValue) (bson.Raw, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Expected field %sto be of type object", field)
	}
	return d, nil
}

// Hint returns an index hint: an index name or key pattern. An empty
// document is no hint.
func Hint(v bson.RawValue) (bson.RawValue, error) {
	switch v.Type {
	case bson.TypeString:
		return v, nil
	case bson.TypeEmbeddedDocument:
		if len(v.Value) <= 5 {
			return bson.RawValue{}, nil
		}
		return v, nil
	}
	return bson.RawValue{}, mongoerr.New(mongoerr.FailedToParse, "Hint must be a string or an object")
}

// Doc returns an embedded document argument.
func Doc(cmd, field string, v bson.RawValue) (bson.Raw, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, WrongType(cmd, field, v.Type, "object")
	}
	return d, nil
}

// Array returns an array argument.
func Array(cmd, field string, v bson.RawValue) (bson.RawArray, error) {
	a, ok := v.ArrayOK()
	if !ok {
		return nil, WrongType(cmd, field, v.Type, "array")
	}
	return a, nil
}

// IsNumber reports whether t is one of BSON's numeric types.
func IsNumber(t bson.Type) bool {
	switch t {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return true
	}
	return false
}

// SaturatingInt64 converts f toward zero, saturating beyond the int64 range
// and taking NaN as 0, as MongoDB's parsers of integer fields do.
func SaturatingInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// DecimalToFloat converts through the decimal string, which ParseFloat reads
// in full, NaN and Infinity included; beyond the float64 range it yields ±Inf.
func DecimalToFloat(d bson.Decimal128) float64 {
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

// TypeName is MongoDB's name for a BSON type, as error messages spell it.
func TypeName(t bson.Type) string { return bsonvalue.TypeName(bsoncore.Type(t)) }

// CheckCollation checks what a command's parser checks of a collation:
// that it is a document. cmd names the parser in a type error, as in
// "BSON field 'count.collation' is the wrong type"; commands whose parser
// does not name itself pass "collation". Its content is checked where it
// is used, by the engine (engine.WithCollation), as mongod checks it when
// it makes the collator.
func CheckCollation(cmd string, v bson.RawValue) error {
	if _, ok := v.DocumentOK(); !ok {
		return WrongType(cmd, "collation", v.Type, "object")
	}
	return nil
}
