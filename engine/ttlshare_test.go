package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/bucketkv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/ttlindex"
)

// TestReapShareTwoEngines: two engines over one TiKV mock divide the
// reaper's work by expiry bucket under leases in the store: each purges
// exactly the due documents whose expiry entries lie in the buckets it
// holds, the date TTL index goes to one of them whole, and once one stops
// renewing (a dead server) and its leases run out, the other takes its
// buckets and purges their documents.
func TestReapShareTwoEngines(t *testing.T) {
	ctx := context.Background()
	mock, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	ttlClock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// The leases run on a time of their own, the store's in production,
	// moved by hand here; the rounds are driven by hand too: the
	// background ones come every third of an hour.
	leaseTime := &rosterTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	const lease = time.Hour
	// open opens an engine on the cluster, closed when the test ends
	// unless the test closes it (closeAtEnd false).
	open := func(closeAtEnd bool) *Engine {
		t.Helper()
		s, err := mock.Open(tikvkv.Options{Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		e, err := Open(t.TempDir(), Options{Store: s, Clock: ttlClock, NoReaper: true, Oplog: true,
			Cluster: ClusterOptions{Lease: lease, Now: leaseTime.Now}})
		if err != nil {
			t.Fatal(err)
		}
		if closeAtEnd {
			t.Cleanup(func() { e.Close() })
		}
		return e
	}
	a := open(true)
	mustRaw := func(d bson.D) bson.Raw {
		raw, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	// The catalog is made before b opens, which loads it: catalog changes
	// across servers are not this test's concern.
	if _, err := a.CreateIndexes(ctx, "db", "c", []bson.Raw{mustRaw(bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 10}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateIndexes(ctx, "db", "d", []bson.Raw{mustRaw(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 0}})}); err != nil {
		t.Fatal(err)
	}
	b := open(true)
	engines := []*Engine{a, b}
	rounds := func() {
		t.Helper()
		for range 2 { // a handover is taken at the new holder's next round
			for _, e := range engines {
				if err := e.reapShareRound(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	rounds()
	for i, e := range engines {
		if held, total, shared := e.ReapRanges(); !shared || total != TimeOrderedBuckets || held != total/2 {
			t.Fatalf("engine %d holds %d of %d ranges (shared %v), want half of %d", i, held, total, shared, TimeOrderedBuckets)
		}
	}

	insert := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			e := engines[i%len(engines)]
			if _, err := e.Insert(ctx, "db", "c", []bson.Raw{mustRaw(bson.D{{Key: "_id", Value: i}})}, true); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Insert(ctx, "db", "d", []bson.Raw{mustRaw(bson.D{{Key: "_id", Value: i}, {Key: "at", Value: ttlClock.Now()}})}, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	// byBucket counts the expiry entries of db.c by the bucket they are
	// stored in.
	byBucket := func() map[int]int {
		t.Helper()
		out := map[int]int{}
		lo, hi := ttlindex.CollRange(a.collection("db", "c").st().meta.ID)
		it, err := a.store.Iter(ctx, lo, hi, false)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			bk, ok := bucketkv.BucketOf(a.store, it.Key())
			if !ok {
				t.Fatalf("expiry key %x is in no bucket", it.Key())
			}
			out[bk]++
		}
		return out
	}
	const n = 200
	insert(0, n)
	ttlClock.Advance(10 * time.Second)
	counts := byBucket()
	dSlot := slotOfIndex(t, a, "db", "d", "at_1")
	total := 0
	for i, e := range engines {
		want := 0
		held := e.reapSlots()
		for bk, c := range counts {
			if held[bk] {
				want += c
			}
		}
		if held[dSlot] {
			want += n
		}
		got, err := e.Reaper().Pass()
		if err != nil {
			t.Fatal(err)
		}
		if got != want || got == 0 {
			t.Errorf("engine %d purged %d documents, want %d: those of its buckets %v", i, got, want, held)
		}
		total += got
	}
	if total != 2*n {
		t.Fatalf("the engines purged %d documents in all, want %d", total, 2*n)
	}

	// a dies: it renews neither its roster record nor its leases. Until
	// they run out b leaves a's buckets alone.
	a.Halt()
	insert(n, 2*n)
	ttlClock.Advance(10 * time.Second)
	if err := b.reapShareRound(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := b.ReapRanges(); held != TimeOrderedBuckets/2 {
		t.Fatalf("b holds %d ranges while a's leases hold, want its own %d", held, TimeOrderedBuckets/2)
	}
	leaseTime.Add(lease + time.Second)
	if err := b.Member().Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.reapShareRound(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := b.ReapRanges(); held != TimeOrderedBuckets {
		t.Fatalf("b holds %d ranges after a's leases ran out, want all %d", held, TimeOrderedBuckets)
	}
	if got, err := b.Reaper().Pass(); err != nil || got != 2*n {
		t.Fatalf("b purged %d documents after taking over, want %d (%v)", got, 2*n, err)
	}
	if got, err := a.Reaper().Pass(); err != nil || got != 0 {
		t.Fatalf("the halted engine purged %d documents (%v)", got, err)
	}

	// A server that joins gets its share; one that closes releases its
	// leases and leaves the roster, and the other takes them at its next
	// round, without waiting for them to run out.
	c := open(false)
	engines = []*Engine{b, c}
	rounds()
	if held, _, _ := c.ReapRanges(); held != TimeOrderedBuckets/2 {
		t.Fatalf("a joining engine holds %d ranges, want %d", held, TimeOrderedBuckets/2)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.reapShareRound(ctx); err != nil {
		t.Fatal(err)
	}
	if held, _, _ := b.ReapRanges(); held != TimeOrderedBuckets {
		t.Fatalf("b holds %d ranges after the other closed, want all %d", held, TimeOrderedBuckets)
	}
}

// slotOfIndex is the reaper slot of a date TTL index.
func slotOfIndex(t *testing.T, e *Engine, db, coll, name string) int {
	t.Helper()
	for _, ix := range e.collection(db, coll).st().dateTTL {
		if ix.Meta.Name == name {
			return int(ix.Meta.ID % uint64(TimeOrderedBuckets))
		}
	}
	t.Fatalf("no date TTL index %s on %s.%s", name, db, coll)
	return 0
}
