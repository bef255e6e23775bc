package engine

import (
	"context"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/spill"
)

// The memory a find may hold: a sort that no index provides reads every
// match before the first result. Without allowDiskUse it stops at MongoDB's
// 100 MiB (Options.SortMemoryLimit). With it, what passes that limit is
// sorted in runs on disk (package spill) and merged as the cursor is read;
// the runs belong to the cursor and go with it. Aggregation counts the same
// way; see package pipeline.

// refillBytes is about how much of a spilled sort a cursor takes into
// memory at a time.
const refillBytes = 1 << 20

// materializeSpilling reads every match into a sorter that spills to sc,
// or to scratch space of the cursor's own if sc is nil.
func (c *Cursor) materializeSpilling(ctx context.Context, srt *query.Sort, sc *spill.Scratch) error {
	if sc == nil {
		sc = c.e.newScratch()
		c.scratch = sc
	}
	cmp := func(a, b []byte) int { return srt.Compare(a[headerLen:], b[headerLen:]) }
	sorter := spill.NewSorter(sc, cmp, min(c.e.sortLimit, c.e.memLimit))
	for !c.sc.done {
		err := c.sc.next(ctx, func(d *storedDoc) (bool, error) {
			if !c.filter.Match(d.doc) {
				return true, nil
			}
			rec := make([]byte, 0, headerLen+len(d.doc))
			rec = append(appendHeader(rec, d.h), d.doc...)
			return true, sorter.Add(ctx, rec)
		})
		if err != nil {
			return err
		}
	}
	c.held = sorter.Held()
	it, err := sorter.Iter(ctx)
	if err != nil {
		return err
	}
	c.sorted = it
	c.materialized = true
	return c.refill(ctx)
}

// refill takes the next documents of a spilling sort once the cursor has
// handed out those it took.
func (c *Cursor) refill(ctx context.Context) error {
	if len(c.items) > 0 || c.sorted == nil {
		return nil
	}
	size := 0
	for size < refillBytes {
		rec, err := c.sorted.Next(ctx)
		if err == io.EOF {
			// What the sorter held is all in items now.
			c.held = int64(size)
			for _, d := range c.items {
				c.held += int64(len(d.doc))
			}
			return c.closeSpill()
		}
		if err != nil {
			return err
		}
		h, doc, err := splitValue(rec)
		if err != nil {
			return err
		}
		c.items = append(c.items, storedDoc{h: h, doc: bson.Raw(doc)})
		c.held += int64(len(doc))
		size += len(rec)
	}
	return nil
}

// Close releases what the cursor holds on disk. A cursor closes itself
// when exhausted.
func (c *Cursor) Close() error {
	c.exhausted = true
	c.items = nil
	return c.closeSpill()
}

// closeSpill removes the runs of a spilling sort.
func (c *Cursor) closeSpill() error {
	var err error
	if c.sorted != nil {
		err = c.sorted.Close()
		c.sorted = nil
	}
	if c.scratch != nil {
		if cerr := c.scratch.Close(); err == nil {
			err = cerr
		}
		c.scratch = nil
	}
	return err
}

// sortLimit is the limit of a find's blocking sort without allowDiskUse.
func (e *Engine) sortLimitOf() pipeline.Limit {
	return pipeline.Limit{Bytes: e.sortLimit, Exceeded: pipeline.SortExceeded}
}
