// Package conformance holds what the conformance runners of several
// packages share: the strict comparison of a result with the value a case
// expects. It is internal because only tests use it.
package conformance

import (
	"bytes"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Equal compares values strictly, as the conformance files mean "expect":
// same types (1 is not 1.0), same values, same field order; NaN equals NaN.
// With approx, doubles need only agree to a relative 1e-9.
func Equal(a, b bsoncore.Value, approx bool) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case bsoncore.TypeDouble:
		x, y := a.Double(), b.Double()
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) && math.IsNaN(y)
		}
		if approx && x != y {
			return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
		}
		return x == y
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		ea, errA := bsoncore.Document(a.Data).Elements()
		eb, errB := bsoncore.Document(b.Data).Elements()
		if errA != nil || errB != nil || len(ea) != len(eb) {
			return false
		}
		for i := range ea {
			if a.Type == bsoncore.TypeEmbeddedDocument && ea[i].Key() != eb[i].Key() {
				return false
			}
			if !Equal(ea[i].Value(), eb[i].Value(), approx) {
				return false
			}
		}
		return true
	}
	return bytes.Equal(a.Data, b.Data)
}
