package bsonvalue

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TypeName returns MongoDB's name for a BSON type, as $type accepts it and
// error messages spell it; "missing" for no value.
func TypeName(t bsoncore.Type) string {
	switch t {
	case 0:
		return "missing"
	case bsoncore.TypeDouble:
		return "double"
	case bsoncore.TypeString:
		return "string"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeBinary:
		return "binData"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeObjectID:
		return "objectId"
	case bsoncore.TypeBoolean:
		return "bool"
	case bsoncore.TypeDateTime:
		return "date"
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeRegex:
		return "regex"
	case bsoncore.TypeDBPointer:
		return "dbPointer"
	case bsoncore.TypeJavaScript:
		return "javascript"
	case bsoncore.TypeSymbol:
		return "symbol"
	case bsoncore.TypeCodeWithScope:
		return "javascriptWithScope"
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeTimestamp:
		return "timestamp"
	case bsoncore.TypeInt64:
		return "long"
	case bsoncore.TypeDecimal128:
		return "decimal"
	case bsoncore.TypeMinKey:
		return "minKey"
	case bsoncore.TypeMaxKey:
		return "maxKey"
	}
	return "type " + strconv.Itoa(int(t))
}

// typeAliases are the names $type accepts: TypeName's, inverted.
// typeAliases is never written after initialization.
var typeAliases = func() map[string]bsoncore.Type {
	m := make(map[string]bsoncore.Type)
	for _, t := range []bsoncore.Type{bsoncore.TypeMinKey, bsoncore.TypeMaxKey} {
		m[TypeName(t)] = t
	}
	for t := bsoncore.TypeDouble; t <= bsoncore.TypeDecimal128; t++ {
		m[TypeName(t)] = t
	}
	return m
}()

// TypeByAlias is the BSON type $type names name, as TypeName spells it.
func TypeByAlias(name string) (bsoncore.Type, bool) {
	t, ok := typeAliases[name]
	return t, ok
}
