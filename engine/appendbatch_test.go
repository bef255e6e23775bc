package engine

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/oplog"
)

// appendEngine has 300 documents of 20 bytes to 3 KB in db.c, with an
// index on a and a multikey one on t, and keeps the oplog; its store
// overwrites what its iterators handed out once they move on.
func appendEngine(t *testing.T) *Engine {
	t.Helper()
	dir := t.TempDir()
	s, err := pebblekv.Open(dir, pebblekv.Options{LogsDeletes: oplog.IsEntryKey})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, Options{Store: scribbleStore{s}, Clock: clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), NoReaper: true, Oplog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	var docs []bson.Raw
	for i := range 300 {
		d, _ := bson.Marshal(bson.D{
			{Key: "_id", Value: i}, {Key: "a", Value: i % 7},
			{Key: "t", Value: bson.A{i % 3, i % 5}},
			{Key: "pad", Value: strings.Repeat(string(rune('a'+i%26)), i*37%3000)},
		})
		docs = append(docs, d)
	}
	if _, err := e.Insert(ctx, "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "t"} {
		spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: key, Value: 1}}}, {Key: "name", Value: key + "_1"}})
		if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{spec}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// appendElements is docs as the elements of an array, as a reply holds
// them.
func appendElements(dst []byte, docs []bson.Raw) []byte {
	for i, d := range docs {
		dst = append(dst, byte(bson.TypeEmbeddedDocument))
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, 0)
		dst = append(dst, d...)
	}
	return dst
}

// batchSteps are the (n, maxBytes) of successive batches: counts, byte
// limits a document passes alone, and limits that leave one document
// pending for the next batch.
var batchSteps = [][2]int{{101, 16 << 20}, {3, 1 << 20}, {0, 4000}, {1, 1}, {5, 10000}, {0, 2500}, {2, 100}, {0, 16 << 20}}

func TestAppendBatchIsNextBatch(t *testing.T) {
	e := appendEngine(t)
	ctx := context.Background()
	raw := func(d bson.D) bson.Raw { r, _ := bson.Marshal(d); return r }
	byID := raw(bson.D{{Key: "_id", Value: 1}})
	specs := map[string]FindSpec{
		"all":        {},
		"range":      {Filter: raw(bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 40}}}}), Sort: byID, Limit: 77},
		"reverse":    {Filter: raw(bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 250}}}}), Sort: raw(bson.D{{Key: "_id", Value: -1}})},
		"points":     {Filter: raw(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{5, 17, 99, 100, 101, 250, 299, 1000}}}}})},
		"index":      {Filter: raw(bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{1, 3}}}}})},
		"multikey":   {Filter: raw(bson.D{{Key: "t", Value: bson.D{{Key: "$gte", Value: 2}}}})},
		"sorted":     {Sort: raw(bson.D{{Key: "pad", Value: -1}, {Key: "_id", Value: 1}}), Skip: 3},
		"top-k":      {Sort: raw(bson.D{{Key: "pad", Value: 1}, {Key: "_id", Value: 1}}), Limit: 40},
		"spilled":    {Sort: raw(bson.D{{Key: "a", Value: 1}, {Key: "_id", Value: -1}}), AllowDiskUse: true},
		"project":    {Filter: raw(bson.D{{Key: "a", Value: 2}}), Projection: raw(bson.D{{Key: "pad", Value: 0}})},
		"positional": {Filter: raw(bson.D{{Key: "t", Value: 4}}), Projection: raw(bson.D{{Key: "t.$", Value: 1}})},
		"returnKey":  {Filter: raw(bson.D{{Key: "a", Value: 4}}), Hint: bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "a_1")}, ReturnKey: true},
		"skipLimit":  {Skip: 250, Limit: 30},
		"missing":    {Filter: raw(bson.D{{Key: "a", Value: 99}})},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			compareBatches(t, ctx, func(ctx context.Context) *Cursor {
				cur, err := e.Find(ctx, "db", "c", spec)
				if err != nil {
					t.Fatal(err)
				}
				return cur
			})
		})
	}
	t.Run("oplog", func(t *testing.T) {
		compareBatches(t, ctx, func(ctx context.Context) *Cursor {
			cur, err := e.Find(ctx, "local", "oplog.rs", FindSpec{})
			if err != nil {
				t.Fatal(err)
			}
			return cur
		})
	})
	t.Run("snapshot", func(t *testing.T) {
		// Both read one snapshot, taken before more documents come.
		snap, _, err := e.BeginSnapshotRead(ctx, oplog.Timestamp{})
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Abort()
		if _, err := e.Insert(ctx, "db", "c", []bson.Raw{raw(bson.D{{Key: "_id", Value: 1000}})}, true); err != nil {
			t.Fatal(err)
		}
		compareBatches(t, WithTransaction(ctx, snap), func(ctx context.Context) *Cursor {
			cur, err := e.Find(ctx, "db", "c", FindSpec{Filter: raw(bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 200}}}})})
			if err != nil {
				t.Fatal(err)
			}
			return cur
		})
	})
}

// compareBatches reads two cursors open opens, one with NextBatch and one
// with AppendBatch, through batchSteps, and wants the same batches, which
// together hold what a third cursor's All returns.
func compareBatches(t *testing.T, ctx context.Context, open func(context.Context) *Cursor) {
	t.Helper()
	ref := open(ctx)
	all, err := ref.All(ctx)
	_ = ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	a, b := open(ctx), open(ctx)
	defer a.Close()
	defer b.Close()
	prefix := []byte("prefix")
	total := 0
	for i := 0; !a.Exhausted(); i++ {
		if i > 1000 {
			t.Fatal("no end")
		}
		step := batchSteps[i%len(batchSteps)]
		docs, err := a.NextBatch(ctx, step[0], step[1])
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.AppendBatch(ctx, bytes.Clone(prefix), step[0], step[1])
		if err != nil {
			t.Fatal(err)
		}
		for j, d := range docs {
			if total+j >= len(all) || !bytes.Equal(d, all[total+j]) {
				t.Fatalf("batch %d %v: document %d is not the %dth of all", i, step, j, total+j)
			}
		}
		if want := appendElements(bytes.Clone(prefix), docs); !bytes.Equal(got, want) {
			t.Fatalf("batch %d %v: AppendBatch gave %d bytes, NextBatch's %d documents %d", i, step, len(got), len(docs), len(want))
		}
		if a.Exhausted() != b.Exhausted() || a.HeldBytes() != b.HeldBytes() {
			t.Fatalf("batch %d: exhausted %v, %v; held %d, %d", i, a.Exhausted(), b.Exhausted(), a.HeldBytes(), b.HeldBytes())
		}
		total += len(docs)
	}
	if total != len(all) {
		t.Fatalf("%d documents in batches, %d in all", total, len(all))
	}
	if got, err := b.AppendBatch(ctx, nil, 0, 16<<20); err != nil || len(got) != 0 {
		t.Fatalf("after the end: %d bytes, %v", len(got), err)
	}
	t.Logf("%d documents", total)
}

// scribbleStore hands out iterators whose keys and values are valid only
// until the iterator moves or closes, and overwritten then, so that a
// reader that keeps them past that reads garbage rather than, by luck, the
// store's still intact memory.
type scribbleStore struct{ kv.Store }

func (s scribbleStore) Unwrap() kv.Store { return s.Store }

func (s scribbleStore) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	it, err := s.Store.Iter(ctx, lo, hi, reverse)
	if err != nil {
		return nil, err
	}
	return &scribbleIter{Iterator: it}, nil
}

func (s scribbleStore) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	snap, err := s.Store.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return scribbleSnapshot{snap}, nil
}

type scribbleSnapshot struct{ kv.Snapshot }

func (s scribbleSnapshot) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	it, err := s.Snapshot.Iter(ctx, lo, hi, reverse)
	if err != nil {
		return nil, err
	}
	return &scribbleIter{Iterator: it}, nil
}

type scribbleIter struct {
	kv.Iterator
	handed [][]byte
}

func (i *scribbleIter) scribble() {
	for _, b := range i.handed {
		for j := range b {
			b[j] = 0xee
		}
	}
	i.handed = i.handed[:0]
}

func (i *scribbleIter) hand(b []byte) []byte {
	c := bytes.Clone(b)
	i.handed = append(i.handed, c)
	return c
}

func (i *scribbleIter) First() bool            { i.scribble(); return i.Iterator.First() }
func (i *scribbleIter) SeekGE(key []byte) bool { i.scribble(); return i.Iterator.SeekGE(key) }
func (i *scribbleIter) Next() bool             { i.scribble(); return i.Iterator.Next() }
func (i *scribbleIter) Close() error           { i.scribble(); return i.Iterator.Close() }
func (i *scribbleIter) Key() []byte            { return i.hand(i.Iterator.Key()) }
func (i *scribbleIter) Value() []byte          { return i.hand(i.Iterator.Value()) }
