package pipeline

import (
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
)

// spill sorts src holding at most the spill budget in memory; the rest
// goes to sorted runs on disk, merged as the output is read.
func (s *sortStage) spill(r *run, src Source) (Source, error) {
	sorter := spill.NewSorter(r.opts.Scratch, func(a, b []byte) int { return s.s.Compare(a, b) }, r.spillBudget())
	if err := src(func(d bson.Raw) error { return sorter.Add(r.ctx, d) }); err != nil {
		return nil, err
	}
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
	}, nil
}
