package engine

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/ttlindex"
)

// TestConcurrentWritesKeepIndexesConsistent runs inserts, updates, deletes
// and reaper passes from several goroutines over a few contended keys, with
// a unique index and TTL on, then checks that every index and expiry entry
// matches a stored document and the other way round.
func TestConcurrentWritesKeepIndexesConsistent(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(t.TempDir(), Options{Clock: clock, NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, spec := range []bson.D{
		{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u"}, {Key: "unique", Value: true}, {Key: "sparse", Value: true}},
		{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags"}},
		{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 5}},
	} {
		raw, _ := bson.Marshal(spec)
		if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{raw}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for i := 0; i < 300; i++ {
				id := r.Intn(40)
				u := r.Intn(15)
				var err error
				switch r.Intn(5) {
				case 0, 1:
					d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "u", Value: u}, {Key: "tags", Value: bson.A{u, u + 1}}, {Key: "ttl", Value: r.Intn(3) - 1}})
					_, err = e.Insert(context.Background(), "db", "c", []bson.Raw{d}, true)
				case 2:
					upd, _ := bson.Marshal(bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: u}, {Key: "tags", Value: bson.A{u}}}}})
					var up *update.Update
					if up, err = update.Compile(upd, update.Options{}); err == nil {
						filter, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}})
						_, err = e.Update(ctx, "db", "c", UpdateSpec{Filter: filter, Update: up, Upsert: r.Intn(2) == 0})
					}
				case 3:
					filter, _ := bson.Marshal(bson.D{{Key: "u", Value: u}})
					_, err = e.Delete(ctx, "db", "c", filter, 0, bson.RawValue{})
				case 4:
					if seed == 0 {
						clock.Advance(time.Second)
					}
					_, err = e.Reaper().Pass()
				}
				if err != nil && mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
					t.Error(err)
					return
				}
			}
		}(int64(w))
	}
	wg.Wait()
	checkConsistency(t, e, "db", "c")
}

// checkConsistency compares the stored documents of a collection with its
// index and expiry entries.
func checkConsistency(t *testing.T, e *Engine, db, coll string) {
	t.Helper()
	c := e.collection(db, coll)
	w := e.newWriter(context.Background(), c)
	defer w.close()
	want := map[string]bool{}
	lo, hi := record.DocRange(w.st.meta.ID)
	it, _ := rawIter(e, lo, hi)
	docs := 0
	for ok := it.First(); ok; ok = it.Next() {
		h, doc, err := record.SplitValue(it.Value())
		if err != nil {
			t.Fatal(err)
		}
		d := &storedDoc{pk: append([]byte(nil), record.PKOfDocKey(it.Key())...), h: h, doc: append(bson.Raw(nil), doc...)}
		ent, err := w.entriesOf(d)
		if err != nil {
			t.Fatal(err)
		}
		for i, ix := range w.st.indexes {
			for _, k := range ent.index[i] {
				want[string(ix.EntryKey(nil, k, d.pk))] = true
			}
		}
		if ent.expiry != nil {
			want[string(ent.expiry)] = true
		}
		docs++
	}
	it.Close()
	got := map[string]bool{}
	for _, ix := range w.st.indexes {
		lo, hi := record.IndexRange(ix.Meta.ID)
		it, _ := rawIter(e, lo, hi)
		for ok := it.First(); ok; ok = it.Next() {
			got[string(it.Key())] = true
		}
		it.Close()
	}
	lo, hi = ttlindex.CollRange(w.st.meta.ID)
	it, _ = rawIter(e, lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = true
	}
	it.Close()
	for k := range want {
		if !got[k] {
			t.Errorf("entry %x of a stored document is missing", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("entry %x belongs to no stored document", k)
		}
	}
	t.Log(fmt.Sprintf("%d documents, %d entries consistent", docs, len(got)))
}
