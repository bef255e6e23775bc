package project

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

func arrayValue(values []bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, values...)}
}

func isNumber(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// isFlag reports whether a projected value of type t means inclusion or
// exclusion rather than a literal.
func isFlag(t bsoncore.Type) bool {
	return t == bsoncore.TypeBoolean || isNumber(t)
}

// truthy reports whether a flag includes: true or a non-zero number.
func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32:
		return v.Int32() != 0
	case bsoncore.TypeInt64:
		return v.Int64() != 0
	case bsoncore.TypeDouble:
		return v.Double() != 0
	}
	c, _, err := bson.NewDecimal128(v.Decimal128()).BigInt()
	return err != nil || c.Sign() != 0 // NaN and infinities are true
}

// intValue converts a number to an int the way MongoDB's numberInt does:
// doubles are truncated, and values out of the int32 range saturate.
func intValue(v bsoncore.Value) int {
	var f float64
	switch v.Type {
	case bsoncore.TypeInt32:
		return int(v.Int32())
	case bsoncore.TypeInt64:
		f = float64(v.Int64())
	case bsoncore.TypeDouble:
		f = v.Double()
	default:
		f, _ = v.AsFloat64OK()
	}
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int(f)
}

// typeName is MongoDB's name for a BSON type.
func typeName(t bsoncore.Type) string { return bsonvalue.TypeName(t) }
