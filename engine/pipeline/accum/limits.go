package accum

import "github.com/lethedb/lethe/mongoerr"

// maxAccumulatorBytes bounds the values one $push or $addToSet gathers,
// as MongoDB's internalQueryMaxPushBytes and internalQueryMaxAddToSetBytes
// do by default.
const maxAccumulatorBytes = 100 << 20

func accumulatorExceeded(op string) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "%s used too much memory and cannot spill to disk. Memory limit: %d bytes", op, maxAccumulatorBytes)
}
