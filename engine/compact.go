package engine

import (
	"context"
	"fmt"

	"github.com/lethedb/lethe/mongoerr"
)

// CompactCollection compacts the store's key ranges of db.coll (its
// documents, expiry entries and indexes), so that the space of deleted and
// overwritten records is given back now rather than when the store's own
// compactions reach them; the compact command asks for it. A store with no
// local disk compacts by itself. It returns the bytes the ranges'
// estimated disk usage went down by, zero when it did not.
func (e *Engine) CompactCollection(ctx context.Context, db, coll string) (int64, error) {
	c := e.collection(db, coll)
	if c == nil {
		return 0, mongoerr.New(mongoerr.NamespaceNotFound, "collection does not exist")
	}
	ranges := collectionRanges(c.st())
	usage := func() int64 {
		var n int64
		for _, r := range ranges {
			du, _ := e.store.ApproximateSize(ctx, r.Lo, r.Hi)
			n += du
		}
		return n
	}
	before := usage()
	if e.local != nil {
		for _, r := range ranges {
			if err := e.local.Compact(ctx, r.Lo, r.Hi); err != nil {
				return 0, fmt.Errorf("engine: compact %s.%s: %w", db, coll, err)
			}
		}
	}
	return max(before-usage(), 0), nil
}
