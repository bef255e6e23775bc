package engine

import (
	"bytes"
	"context"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
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
// or to scratch space of the cursor's own if sc is nil. When k is not
// zero, only the first k matches are kept, in memory, unless they pass the
// sort limit: then they and the matches that follow go to the sorter.
func (c *Cursor) materializeSpilling(ctx context.Context, srt *query.Sort, sc *spill.Scratch, k int64) error {
	if sc == nil {
		sc = c.e.newScratch()
		c.scratch = sc
	}
	budget := min(c.e.sortLimit, c.e.memLimit)
	sorter := spill.NewSorter(sc, compareRecords(srt), budget)
	top := newSortTop(srt, k)
	for !c.sc.done {
		err := c.sc.next(ctx, func(d *storedDoc) (bool, error) {
			if !c.filter.Match(d.doc) {
				return true, nil
			}
			if top == nil {
				return true, sorter.Add(ctx, keyedSortRecord(sortRecord(d), srt))
			}
			if top.offer(d); top.Held() <= budget {
				return true, nil
			}
			for _, rec := range top.Take() {
				if err := sorter.Add(ctx, rec); err != nil {
					return false, err
				}
			}
			top = nil
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	if top != nil {
		c.held = top.Held()
		items, err := top.sorted()
		c.items, c.materialized = items, true
		return err
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
		h, doc, err := record.SplitValue(rec)
		if err != nil {
			return err
		}
		doc = docOfRecord(doc)
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

// sortRecord is d as a spilling sort keeps it: its header, for the expiry
// check as it is handed out, and its document.
func sortRecord(d *storedDoc) []byte {
	rec := make([]byte, 0, record.HeaderLen+len(d.doc))
	return append(record.AppendHeader(rec, d.h), d.doc...)
}

// compareRecords orders sort records by their documents.
func compareRecords(srt *query.Sort) func(a, b []byte) int {
	if srt.Collator() != nil {
		return compareKeyedRecords
	}
	return func(a, b []byte) int { return srt.Compare(a[record.HeaderLen:], b[record.HeaderLen:]) }
}

// sortTop keeps the first k matches of a sort under a limit, as MongoDB
// does: a find sorted without an index and limited holds its skip and
// limit's worth of documents, not every match.
type sortTop struct {
	*spill.Top
	buf []byte // the record of the document offered, reused
	srt *query.Sort
}

// newSortTop is the sortTop of k documents, or nil when k is zero.
func newSortTop(srt *query.Sort, k int64) *sortTop {
	if k <= 0 || k > math.MaxInt32 {
		return nil
	}
	return &sortTop{Top: spill.NewTop(int(k), compareRecords(srt)), srt: srt}
}

// offer keeps a copy of d if it is among the first k so far.
func (t *sortTop) offer(d *storedDoc) {
	t.buf = keyedSortRecord(append(record.AppendHeader(t.buf[:0], d.h), d.doc...), t.srt)
	if t.Offer(t.buf) {
		t.Keep(bytes.Clone(t.buf))
	}
}

// sorted returns the documents kept, in order.
func (t *sortTop) sorted() ([]storedDoc, error) {
	recs := t.Sorted()
	docs := make([]storedDoc, len(recs))
	for i, rec := range recs {
		h, doc, err := record.SplitValue(rec)
		if err != nil {
			return nil, err
		}
		docs[i] = storedDoc{h: h, doc: docOfRecord(doc)}
	}
	return docs, nil
}

// Requests that allow disk use spill what their blocking sorts and stages
// hold past the sort limit to temporary files (package spill) in a
// directory of their own under the store's scratch directory (the data
// directory's _tmp on pebble), removed when the request (or, for find, its
// cursor) ends; the store's Open removes whatever a crash left there. The
// files count against the disk's free-space reserve as the store's writes
// do, and against QuerySpillLimit per request. A store with no local disk
// spills to a directory of the system's temporary space.

// DefaultQuerySpillLimit bounds the bytes one request keeps in temporary
// files: sixteen times the request's memory bound, enough for a sort or
// $group over a few GiB while one request cannot take the whole disk
// before the free-space reserve stops it.
const DefaultQuerySpillLimit = 4 << 30

// newScratch is the temporary space of one request.
func (e *Engine) newScratch() *spill.Scratch {
	n := strconv.FormatUint(e.scratchSeq.Add(1), 10)
	if e.local == nil {
		return spill.New(spill.Config{FS: spill.OS, Dir: filepath.Join(e.scratchDir(), n), MaxBytes: e.spillLimit, Exceeded: spillExceeded})
	}
	return spill.New(spill.Config{
		FS:       e.local.ScratchFS(),
		Dir:      filepath.Join(e.scratchDir(), n),
		MaxBytes: e.spillLimit,
		Exceeded: spillExceeded,
		Check:    e.local.SpillRoom,
	})
}

func spillExceeded(limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "the query would write more than %d bytes to temporary files, Lethe's limit for one request", limit)
}

// scratchDir is the directory of the requests' temporary directories.
func (e *Engine) scratchDir() string {
	if e.local != nil {
		return e.local.ScratchDir()
	}
	return e.remoteScratch
}
