package pipeline

import (
	"context"
	"errors"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
)

// SortedResults reads the runs of a pipeline's final $sort, which the
// pipeline left on disk (RunSorted), in batches: the rest of an
// aggregation's output that a cursor reads from disk.
type SortedResults struct {
	sorter  *spill.Sorter
	it      *spill.Iter
	scratch *spill.Scratch // the request's, which holds the runs
	pending bson.Raw       // the document that did not fit the last batch
	done    bool
}

// NewSortedResults reads sorter's runs; it closes scratch, the request's
// scratch space that holds them, when done.
func NewSortedResults(sorter *spill.Sorter, scratch *spill.Scratch) *SortedResults {
	return &SortedResults{sorter: sorter, scratch: scratch}
}

// NextBatch returns the next documents: at most n (no limit when n <= 0)
// and maxBytes together, except that the first may pass maxBytes alone;
// none once exhausted.
func (r *SortedResults) NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	if r.done {
		return nil, nil
	}
	if r.it == nil {
		it, err := r.sorter.Iter(ctx)
		if err != nil {
			return nil, err
		}
		r.it, r.sorter = it, nil
	}
	var out []bson.Raw
	size := 0
	for n <= 0 || len(out) < n {
		d := r.pending
		r.pending = nil
		if d == nil {
			rec, err := r.it.Next(ctx)
			if errors.Is(err, io.EOF) {
				r.done = true
				return out, r.Close()
			}
			if err != nil {
				return nil, err
			}
			d = bson.Raw(rec)
			if err := CheckSize(d); err != nil {
				return nil, err
			}
		}
		// Like MongoDB's, a batch passes maxBytes only with its first
		// document.
		if len(out) > 0 && size+len(d) > maxBytes {
			r.pending = d
			break
		}
		size += len(d)
		out = append(out, d)
	}
	return out, nil
}

// Exhausted reports whether every document was returned.
func (r *SortedResults) Exhausted() bool { return r.done }

// HeldBytes is the document held back for the next batch; the records
// the merge holds are counted as a find's spilled sort counts them, not.
func (r *SortedResults) HeldBytes() int64 { return int64(len(r.pending)) }

// Close removes the runs.
func (r *SortedResults) Close() error {
	r.done, r.pending, r.sorter = true, nil, nil
	var err error
	if r.it != nil {
		err = r.it.Close()
		r.it = nil
	}
	if r.scratch != nil {
		if cerr := r.scratch.Close(); err == nil {
			err = cerr
		}
		r.scratch = nil
	}
	return err
}
