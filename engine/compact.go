package engine

import (
	"context"
	"fmt"

	"github.com/lethedb/lethe/mongoerr"
)

// CompactCollection compacts the store's key ranges of db.coll, its
// documents and its indexes, so that the space of deleted and overwritten
// records is given back now rather than when Pebble's own compactions reach
// them; the compact command asks for it. It returns the bytes the ranges'
// estimated disk usage went down by, zero when it did not.
func (e *Engine) CompactCollection(ctx context.Context, db, coll string) (int64, error) {
	c := e.collection(db, coll)
	if c == nil {
		return 0, mongoerr.New(mongoerr.NamespaceNotFound, "collection does not exist")
	}
	st := c.st()
	ranges := [][2][]byte{}
	lo, hi := docRange(st.meta.ID)
	ranges = append(ranges, [2][]byte{lo, hi})
	for _, ix := range st.indexes {
		lo, hi := indexRange(ix.meta.ID)
		ranges = append(ranges, [2][]byte{lo, hi})
	}
	usage := func() int64 {
		var n int64
		for _, r := range ranges {
			du, _ := e.db.EstimateDiskUsage(r[0], r[1])
			n += int64(du)
		}
		return n
	}
	before := usage()
	for _, r := range ranges {
		if err := e.db.Compact(ctx, r[0], r[1], true); err != nil {
			return 0, fmt.Errorf("engine: compact %s.%s: %w", db, coll, err)
		}
	}
	return max(before-usage(), 0), nil
}
