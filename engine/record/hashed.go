package record

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/mongoerr"
)

// HashedKind is the key pattern value of a hashed field.
const HashedKind = "hashed"

// MongoDB's codes for hashed indexes (src/mongo/db/index/expression_params.cpp,
// jstests/core/index/hashed/single_field_hashed_index.js).
const (
	// HashedArray: a hashed field reached an array, at its end or along
	// its path.
	HashedArray mongoerr.Code = 16766
	// HashedUnique: a hashed index cannot be unique.
	HashedUnique mongoerr.Code = 16764
	// HashedFields: a key pattern has more than one hashed field.
	HashedFields mongoerr.Code = 31303
)

// HashedValue is the value a hashed field keeps for v: MongoDB's hash of
// it, as $toHashedIndexKey computes it, a 64-bit integer. The planner looks
// equal values up by it.
func HashedValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, expr.HashedIndexKey(v))}
}

func errHashedArray(path string) error {
	return mongoerr.New(HashedArray, "hashed indexes do not currently support array values. Found array at path: %s", path)
}
