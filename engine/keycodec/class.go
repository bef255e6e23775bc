package keycodec

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Type classes, in ascending order. Types in one class are compared by value
// with each other. The values double as the leading byte of an encoded key, so
// they must stay stable and above endOfContainer.
const (
	classInvalid = iota + 1 // types outside the BSON specification
	classMinKey
	classUndefined
	classNull
	classNumber
	classString
	classObject
	classArray
	classBinary
	classObjectID
	classBoolean
	classDateTime
	classTimestamp
	classRegex
	classDBPointer
	classJavaScript
	classCodeWithScope
	classMaxKey
)

// TypeClass returns the rank of t's type class, which decides the order of
// values of different classes before their contents are looked at. Types that
// compare by value with each other share a class: int32, int64, double and
// decimal128 are all numbers, and symbols compare as strings. Types outside the
// BSON specification share one class that sorts before MinKey.
func TypeClass(t bsoncore.Type) int {
	switch t {
	case bsoncore.TypeMinKey:
		return classMinKey
	case bsoncore.TypeUndefined:
		return classUndefined
	case bsoncore.TypeNull:
		return classNull
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return classNumber
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return classString
	case bsoncore.TypeEmbeddedDocument:
		return classObject
	case bsoncore.TypeArray:
		return classArray
	case bsoncore.TypeBinary:
		return classBinary
	case bsoncore.TypeObjectID:
		return classObjectID
	case bsoncore.TypeBoolean:
		return classBoolean
	case bsoncore.TypeDateTime:
		return classDateTime
	case bsoncore.TypeTimestamp:
		return classTimestamp
	case bsoncore.TypeRegex:
		return classRegex
	case bsoncore.TypeDBPointer:
		return classDBPointer
	case bsoncore.TypeJavaScript:
		return classJavaScript
	case bsoncore.TypeCodeWithScope:
		return classCodeWithScope
	case bsoncore.TypeMaxKey:
		return classMaxKey
	}
	return classInvalid
}
