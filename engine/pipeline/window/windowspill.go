package window

import (
	"bytes"
	"encoding/binary"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// A $setWindowFields with partitionBy spills as MongoDB's does, as the
// $sort it implies: its input goes to a spill.Sorter on the partition key
// and sortBy, and the sorted records are read back one partition at a
// time. Only the partition at hand is held, and its documents go on to the
// next stage once its window functions are computed, so the stage holds
// its largest partition, not its input.
//
// A partition is not spilled itself: window functions reach the documents
// of their window by position, forwards and backwards ($shift, range
// windows, $derivative), which a partition on disk would have to serve by
// seeking. A partition, with what its window functions hold, past the
// request's limit (Options.MemLimit) fails with MongoDB's 5414201, the
// error of a $setWindowFields past its memory, where MongoDB would spill
// the partition. The stage then holds at most that and the records of the
// sort still in memory (the spill budget).
//
// Without partitionBy the whole input is one partition, which is held
// anyway, so sorting it on disk first would gain nothing: the stage runs in
// memory, within the request's limit, as it does without a Scratch.

// spill computes the windows of src's documents.
func (w *windowStage) Spill(r *pipeline.Run, src pipeline.Source) (pipeline.Source, error) {
	if w.partitionBy == nil {
		docs, err := r.Collect(src, pipeline.Limit{Bytes: r.MemLimit(), Exceeded: pipeline.QueryExceeded})
		if err != nil {
			return nil, err
		}
		if docs, err = w.Apply(r, docs, pipeline.Limit{Bytes: r.MemLimit(), Exceeded: pipeline.QueryExceeded}); err != nil {
			return nil, err
		}
		return pipeline.Slice(docs), nil
	}
	sorter := spill.NewSorter(r.Scratch(), w.compareRecords, r.SpillBudget())
	var key []byte
	err := src(func(doc bson.Raw) error {
		v, err := values.EvalOrNull(r.Context(), w.partitionBy, doc)
		if err != nil {
			return err
		}
		if v.Type == bsoncore.TypeArray {
			return mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
		}
		key = keycodec.Append(key[:0], w.partitionBy.Collator().Key(v))
		return sorter.Add(r.Context(), windowRecord(key, doc))
	})
	if err != nil {
		return nil, err
	}
	return func(fn func(bson.Raw) error) error { return w.fromRuns(r, sorter, fn) }, nil
}

// fromRuns computes the windows of the partitions that sorter brings
// together, one at a time, and passes their documents to fn.
func (w *windowStage) fromRuns(r *pipeline.Run, sorter *spill.Sorter, fn func(bson.Raw) error) error {
	it, err := sorter.Iter(r.Context())
	if err != nil {
		return err
	}
	defer it.Close()
	limit := pipeline.Limit{Bytes: r.MemLimit(), Exceeded: windowExceeded}
	var (
		docs   []bson.Raw
		curKey []byte
		size   int
	)
	emit := func() error {
		h := pipeline.NewHeld(pipeline.Limit{Bytes: r.MemLimit(), Exceeded: pipeline.QueryExceeded}, int64(size))
		if err := w.partition(r, docs, limit, &h); err != nil {
			return err
		}
		for i, d := range docs {
			// Handed on: no longer held here.
			docs[i] = nil
			if err := fn(d); err != nil {
				return err
			}
		}
		docs, size = docs[:0], 0
		return nil
	}
	for {
		rec, err := it.Next(r.Context())
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		k, doc := splitWindowRecord(rec)
		if len(docs) > 0 && !bytes.Equal(k, curKey) {
			if err := emit(); err != nil {
				return err
			}
		}
		if len(docs) == 0 {
			curKey = k
		}
		if size += len(doc); int64(size) > limit.Bytes {
			return limit.Exceeded(limit.Bytes)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		return nil
	}
	return emit()
}

// A window record is the partition key (keycodec, whose bytes sort as
// the values do) and the document:
//
//	uvarint(len(key)) key document
func windowRecord(key []byte, doc bson.Raw) []byte {
	rec := make([]byte, 0, binary.MaxVarintLen32+len(key)+len(doc))
	rec = binary.AppendUvarint(rec, uint64(len(key)))
	rec = append(rec, key...)
	return append(rec, doc...)
}

func splitWindowRecord(rec []byte) (key []byte, doc bson.Raw) {
	n, w := binary.Uvarint(rec)
	return rec[w : w+int(n)], bson.Raw(rec[w+int(n):])
}

// compareRecords orders records by partition key, then by sortBy, the
// order of the sort the stage runs in memory.
func (w *windowStage) compareRecords(a, b []byte) int {
	ka, da := splitWindowRecord(a)
	kb, db := splitWindowRecord(b)
	if c := bytes.Compare(ka, kb); c != 0 || w.sort == nil {
		return c
	}
	return w.sort.Compare(da, db)
}
