package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// The memory a pipeline may hold. What the stages hold is counted in bytes
// of BSON as it grows, against one of two limits:
//
//   - what a blocking stage holds stops at Options.SortLimit (MongoDB's
//     100 MiB): without allowDiskUse it fails there with MongoDB's
//     QueryExceededMemoryLimitNoDiskUseAllowed; with allowDiskUse and a
//     Scratch, $group, $sort and $bucketAuto write the rest to disk, and
//     so do $facet its input and a partitioned $setWindowFields its sort
//     (see flow.go, sortspill.go, groupspill.go, bucketautospill.go,
//     facet.go and package window's windowspill.go);
//   - everything a pipeline holds in memory, spilling or not, stops at
//     Options.MemLimit, with ExceededMemoryLimit: the output of the
//     pipeline (but that of a final $sort that spilled, which RunSorted
//     leaves on disk), what stages after the first that neither flows nor spills
//     pass on (they work on whole arrays of documents), what the groups
//     in memory of a spilling $group grow by. What went to disk does not
//     count; the Scratch has its own bound.

// MaxDocBytes is the largest document a pipeline may make: MongoDB's
// internal limit, 16 MiB and 16 KiB, which lets a stage's result pass the
// user limit by a little, as a $group's may.
const MaxDocBytes = 16<<20 + 16<<10

// Limit is a number of bytes and the error of passing it.
type Limit struct {
	Bytes    int64
	Exceeded func(limit int64) error
}

// SortExceeded is the error of a sort past its limit without allowDiskUse.
func SortExceeded(limit int64) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", limit)
}

func groupExceeded(int64) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.")
}

// QueryExceeded is the error of a request past the memory it may hold.
func QueryExceeded(limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "the query would hold more than %d bytes in memory, Lethe's limit for one request; allowDiskUse spills $group, $sort, $bucketAuto, the sort of a partitioned $setWindowFields and the input of $facet to disk, but not what the other stages, or the results, hold", limit)
}

// docTooLarge is the error of a document of size bytes whose first field
// is named first.
func docTooLarge(size int, first string) error {
	return mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: %s", size, size, MaxDocBytes, first)
}

// held counts the bytes a stage holds against a limit.
type held struct {
	n     int64
	limit Limit
}

// add counts n more bytes, or fewer when n is negative.
func (h *held) add(n int) error {
	h.n += int64(n)
	if h.n > h.limit.Bytes {
		return h.limit.Exceeded(h.limit.Bytes)
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

// checkSizes refuses a document too large to return.
func checkSizes(docs []bson.Raw) error {
	for _, d := range docs {
		if len(d) > MaxDocBytes {
			return docTooLarge(len(d), bsonvalue.FirstKey(d))
		}
	}
	return nil
}
