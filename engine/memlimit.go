package engine

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// The memory a query or an aggregation may hold. Lethe runs every blocking
// stage in memory: sorts no index provides, $group, and, because the
// aggregation stages after the query work on whole arrays of documents,
// each of those stages' output. What they hold is counted in bytes of BSON
// as it grows, against one of two limits:
//
//   - without allowDiskUse, what a blocking stage holds stops at MongoDB's
//     100 MiB (Options.SortMemoryLimit), with MongoDB's
//     QueryExceededMemoryLimitNoDiskUseAllowed;
//   - with allowDiskUse, and for everything else an aggregation holds,
//     Options.QueryMemoryLimit bounds it, with ExceededMemoryLimit, since
//     Lethe never spills to disk.

// maxDocBytes is the largest document a pipeline may make: MongoDB's
// internal limit, 16 MiB and 16 KiB, which lets a stage's result pass the
// user limit by a little, as a $group's may.
const maxDocBytes = 16<<20 + 16<<10

// maxAccumulatorBytes bounds the values one $push or $addToSet gathers,
// as MongoDB's internalQueryMaxPushBytes and internalQueryMaxAddToSetBytes
// do by default.
const maxAccumulatorBytes = 100 << 20

// memoryLimit is a number of bytes and the error of passing it.
type memoryLimit struct {
	bytes    int64
	exceeded func(limit int64) error
}

func sortExceeded(limit int64) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", limit)
}

func groupExceeded(int64) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.")
}

func queryExceeded(limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "the query would hold more than %d bytes in memory, Lethe's limit for one request, which allowDiskUse does not lift: Lethe does not spill to disk", limit)
}

func accumulatorExceeded(op string) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "%s used too much memory and cannot spill to disk. Memory limit: %d bytes", op, maxAccumulatorBytes)
}

// docTooLarge is the error of a document of size bytes whose first field
// is named first.
func docTooLarge(size int, first string) error {
	return mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: %s", size, size, maxDocBytes, first)
}

// firstKey is the name of doc's first field.
func firstKey(doc []byte) string {
	if elems, err := bson.Raw(doc).Elements(); err == nil && len(elems) > 0 {
		return elems[0].Key()
	}
	return ""
}

// held counts the bytes a stage holds against a limit.
type held struct {
	n     int64
	limit memoryLimit
}

// add counts n more bytes, or fewer when n is negative.
func (h *held) add(n int) error {
	h.n += int64(n)
	if h.n > h.limit.bytes {
		return h.limit.exceeded(h.limit.bytes)
	}
	return nil
}

// sizeOf is the bytes of docs.
func sizeOf(docs []bson.Raw) int {
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	return n
}
