package query

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// sampleRate is {$sampleRate: r}: each document matches with probability r,
// drawn anew for every document, as {$expr: {$lt: [{$rand: {}}, r]}} does.
type sampleRate float64

func (r sampleRate) match([]byte, *state) bool { return rand.Float64() < float64(r) }

func compileSampleRate(v bsoncore.Value, lvl level) (node, error) {
	if lvl.subDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$sampleRate can only be applied to the top-level document")
	}
	var r float64
	switch v.Type {
	case bsoncore.TypeDouble:
		r = v.Double()
	case bsoncore.TypeInt32:
		r = float64(v.Int32())
	case bsoncore.TypeInt64:
		r = float64(v.Int64())
	case bsoncore.TypeDecimal128:
		r = -1 // NaN and infinities are out of range
		if q, ok := bsonvalue.DecimalRat(v); ok {
			r, _ = q.Float64()
		}
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "argument to $sampleRate must be a numeric type")
	}
	switch {
	case !(r >= 0 && r <= 1):
		return nil, mongoerr.New(mongoerr.BadValue, "numeric argument to $sampleRate must be in [0, 1]")
	case r == 0:
		return constant(false), nil
	case r == 1:
		return constant(true), nil
	}
	return sampleRate(r), nil
}
