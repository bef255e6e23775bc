package pipeline

import (
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/spill"
)

// spill sorts the documents of src by their groupBy value through a
// spill.Sorter, as MongoDB's $bucketAuto does with its sorter, and cuts
// the buckets as the sorted documents are read: what is held is the
// sorter's budget and the one bucket being filled. The records are those
// of a spilling $group, the key of the value's collation key (keycodec,
// whose bytes sort as the values do under the collation and are equal for
// values equal under it) then the value and the document, so the sort is
// the stable sort of the in-memory path.
func (s *bucketAutoStage) spill(r *run, src Source) (Source, error) {
	sorter := spill.NewSorter(r.opts.Scratch, compareGroupRecords, r.spillBudget())
	n := 0
	err := src(func(d bson.Raw) error {
		v, err := s.key(r, d)
		if err != nil {
			return err
		}
		n++
		return sorter.Add(r.ctx, groupRecord(keycodec.Append(nil, r.opts.Collator.Key(v)), v, d))
	})
	if err != nil {
		return nil, err
	}
	return func(fn func(bson.Raw) error) error {
		it, err := sorter.Iter(r.ctx)
		if err != nil {
			return err
		}
		defer it.Close()
		// The buckets made are passed on: only the one being filled counts,
		// against the request's limit.
		h := held{limit: Limit{Bytes: r.opts.MemLimit, Exceeded: QueryExceeded}}
		b := s.bucketer(r, n, &h, fn)
		b.fresh = true
		for {
			rec, err := it.Next(r.ctx)
			if err == io.EOF {
				return b.end()
			}
			if err != nil {
				return err
			}
			_, v, d := splitGroupRecord(rec)
			if err := b.add(v, d); err != nil {
				return err
			}
		}
	}, nil
}
