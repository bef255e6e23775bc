package values

import "github.com/lethedb/lethe/mongoerr"

// MaxDocBytes is the largest document a pipeline may make: MongoDB's
// internal limit, 16 MiB and 16 KiB, which lets a stage's result pass the
// user limit by a little, as a $group's may. pipeline.MaxDocBytes is the
// same bound, which a test of package pipeline keeps equal to this one;
// it is here for the accumulators ($mergeObjects), which cannot import
// pipeline.
const MaxDocBytes = 16<<20 + 16<<10

// DocTooLarge is the error of a document of size bytes whose first field
// is named first.
func DocTooLarge(size int, first string) error {
	return mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: %s", size, size, MaxDocBytes, first)
}
