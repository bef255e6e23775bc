package pipeline

import (
	"io"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
)

// spill sorts src holding at most the spill budget in memory; the rest
// goes to sorted runs on disk, merged as the output is read.
func (s *sortStage) spill(r *run, src Source) (Source, error) {
	sorter, err := s.sortAll(r, src)
	if err != nil {
		return nil, err
	}
	return sortedSource(r, sorter), nil
}

// sortAll reads src into a sorter that spills past the spill budget.
func (s *sortStage) sortAll(r *run, src Source) (*spill.Sorter, error) {
	sorter := spill.NewSorter(r.opts.Scratch, s.compare, r.spillBudget())
	if err := src(func(d bson.Raw) error { return sorter.Add(r.ctx, d) }); err != nil {
		return nil, err
	}
	return sorter, nil
}

func (s *sortStage) compare(a, b []byte) int { return s.s.Compare(a, b) }

// top keeps the first n documents of src in order, as MongoDB's $sort
// followed by $limit n does: it holds n documents, not all of them. Past
// the limit of a blocking stage, it fails without allowDiskUse, and
// spills them and all that follow with it.
func (s *sortStage) top(r *run, src Source, n int64) (Source, error) {
	top := spill.NewTop(int(min(n, math.MaxInt32)), s.compare)
	limit := Limit{Bytes: r.opts.SortLimit, Exceeded: SortExceeded}
	if r.spills() {
		limit.Bytes = r.spillBudget()
	}
	var sorter *spill.Sorter
	err := src(func(d bson.Raw) error {
		if sorter != nil {
			return sorter.Add(r.ctx, d)
		}
		if top.Offer(d) {
			top.Keep(d)
		}
		if top.Held() <= limit.Bytes {
			return nil
		}
		if !r.spills() {
			return limit.Exceeded(limit.Bytes)
		}
		sorter = spill.NewSorter(r.opts.Scratch, s.compare, limit.Bytes)
		for _, rec := range top.Take() {
			if err := sorter.Add(r.ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sorter != nil {
		return sortedSource(r, sorter), nil
	}
	recs := top.Sorted()
	docs := make([]bson.Raw, len(recs))
	for i, rec := range recs {
		docs[i] = rec
	}
	return Slice(docs), nil
}

// sortedSource is the Source of what sorter sorted.
func sortedSource(r *run, sorter *spill.Sorter) Source {
	return func(fn func(bson.Raw) error) error {
		it, err := sorter.Iter(r.ctx)
		if err != nil {
			return err
		}
		defer it.Close()
		for {
			rec, err := it.Next(r.ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
}
