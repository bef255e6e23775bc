package pipeline

import (
	"bytes"
	"encoding/binary"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/accum"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/spill"
)

// A $group that may spill groups by hashing while its groups fit in half
// its budget, and by sorting after: the documents of groups not yet in
// memory go, tagged with their group's key, to a spill.Sorter, and each of
// those groups is made at the end from the run of its documents, which the
// sort brings together in the order they came.
//
// Sorting rather than spilling partial hash tables keeps the accumulators
// simple: a spilled partial state would need every accumulator to encode
// its state and merge two of them ($push keeping order across the
// partials, $first telling which came first, $median its samples), while
// a group made from its sorted documents runs the accumulators as the
// in-memory path does. It writes whole documents rather than states, which
// costs disk, not memory. Groups already in memory keep theirs to the end,
// so a group's documents are never split between memory and disk; what
// those groups grow by ($push) counts against the request's MemLimit.

// groupOverhead is what a group in memory costs beyond its key and
// accumulators: the map entry, the group and its slice of accumulators.
const groupOverhead = 128

// spill groups the documents of src.
func (g *groupStage) spill(r *run, src Source) (Source, error) {
	ctx := r.ctx
	budget := r.spillBudget() / 2
	mem := newGrouper(g.accs, Limit{Bytes: r.opts.MemLimit, Exceeded: QueryExceeded}, r.opts.Collator)
	var sorter *spill.Sorter
	j := 0
	err := src(func(doc bson.Raw) error {
		if j++; j%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		id, err := values.EvalOrNull(ctx, g.id, doc)
		if err != nil {
			return err
		}
		k := keycodec.Append(nil, r.opts.Collator.Key(id))
		if mem.groups[string(k)] == nil {
			cost := len(k) + len(id.Data) + groupOverhead
			if sorter != nil || mem.h.n+int64(cost) > budget {
				if sorter == nil {
					sorter = spill.NewSorter(r.opts.Scratch, compareGroupRecords, budget)
				}
				return sorter.Add(ctx, groupRecord(k, id, doc))
			}
			// What the grouper does not count of a group.
			if err := mem.h.add(groupOverhead); err != nil {
				return err
			}
		}
		return mem.add(ctx, id, doc)
	})
	if err != nil {
		return nil, err
	}
	return func(fn func(bson.Raw) error) error {
		for i, k := range mem.order {
			doc, err := mem.result(mem.groups[k])
			if err != nil {
				return err
			}
			// Handed out: freed as the output is read.
			delete(mem.groups, k)
			mem.order[i] = ""
			if err := fn(doc); err != nil {
				return err
			}
		}
		if sorter == nil {
			return nil
		}
		return g.fromRuns(r, mem, sorter, fn)
	}, nil
}

// fromRuns makes the groups of the documents sorted by their group's key;
// out makes their documents.
func (g *groupStage) fromRuns(r *run, out *grouper, sorter *spill.Sorter, fn func(bson.Raw) error) error {
	it, err := sorter.Iter(r.ctx)
	if err != nil {
		return err
	}
	defer it.Close()
	var cur *group
	var curKey []byte
	var mem held
	emit := func() error {
		doc, err := out.result(cur)
		if err != nil {
			return err
		}
		return fn(doc)
	}
	for {
		rec, err := it.Next(r.ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		k, id, doc := splitGroupRecord(rec)
		if cur == nil || !bytes.Equal(k, curKey) {
			if cur != nil {
				if err := emit(); err != nil {
					return err
				}
			}
			cur, curKey = &group{id: id, accs: make([]accum.Accumulator, len(g.accs))}, k
			if err := startAccs(r.ctx, cur.accs, g.accs, id); err != nil {
				return err
			}
			mem = held{limit: Limit{Bytes: r.opts.MemLimit, Exceeded: QueryExceeded}}
		}
		for _, a := range cur.accs {
			grew, err := a.Add(r.ctx, doc)
			if err == nil {
				err = mem.add(grew)
			}
			if err != nil {
				return err
			}
		}
	}
	if cur == nil {
		return nil
	}
	return emit()
}

// A group record is the group's key (keycodec, which is equal for values
// that group together), its _id and the document:
//
//	uvarint(len(key)) key type uvarint(len(id)) id document
func groupRecord(key []byte, id bsoncore.Value, doc bson.Raw) []byte {
	rec := make([]byte, 0, 2*binary.MaxVarintLen32+len(key)+1+len(id.Data)+len(doc))
	rec = binary.AppendUvarint(rec, uint64(len(key)))
	rec = append(rec, key...)
	rec = append(rec, byte(id.Type))
	rec = binary.AppendUvarint(rec, uint64(len(id.Data)))
	rec = append(rec, id.Data...)
	return append(rec, doc...)
}

func splitGroupRecord(rec []byte) (key []byte, id bsoncore.Value, doc bson.Raw) {
	n, w := binary.Uvarint(rec)
	key, rec = rec[w:w+int(n)], rec[w+int(n):]
	id.Type = bsoncore.Type(rec[0])
	n, w = binary.Uvarint(rec[1:])
	id.Data, rec = rec[1+w:1+w+int(n)], rec[1+w+int(n):]
	return key, id, bson.Raw(rec)
}

func groupKey(rec []byte) []byte {
	n, w := binary.Uvarint(rec)
	return rec[w : w+int(n)]
}

func compareGroupRecords(a, b []byte) int {
	return bytes.Compare(groupKey(a), groupKey(b))
}
