package engine

import (
	"context"
	"testing"
	"time"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/engine/record"
)

// TestDroppedRangesWaitForVersionLifetime: on pebble a dropped
// collection's keys go with the drop; on TiKV (its mock) they stay until
// the store's version lifetime (TiKV's GC life time) has passed, as TiDB
// deletes a dropped table's ranges only once the GC safe point has passed
// the drop (issue 21), and then go in a reclaim pass.
func TestDroppedRangesWaitForVersionLifetime(t *testing.T) {
	for _, tc := range []struct {
		backend string
		wait    time.Duration
	}{{"pebble", 0}, {"tikv-mock", tikvkv.GCLifetime}} {
		t.Run(tc.backend, func(t *testing.T) {
			clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e, err := openModelEngine(tc.backend, t.TempDir(), Options{Clock: clk, NoReaper: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			if err := insertIDs(t, ctx, e, "c", 1, 2, 3); err != nil {
				t.Fatal(err)
			}
			id := e.collection("db", "c").st().meta.ID
			lo, hi := record.DocRange(id)
			left := func() int {
				t.Helper()
				it, err := e.store.Iter(ctx, lo, hi, false)
				if err != nil {
					t.Fatal(err)
				}
				defer it.Close()
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Error(); err != nil {
					t.Fatal(err)
				}
				return n
			}
			if _, err := e.DropCollection(ctx, "db", "c"); err != nil {
				t.Fatal(err)
			}
			want := 0 // the keys go with the drop
			if tc.wait > 0 {
				want = 3 // they wait
			}
			if n := left(); n != want {
				t.Fatalf("%d documents' keys left after the drop, want %d", n, want)
			}
			if tc.wait == 0 {
				return
			}
			clk.Advance(tc.wait - time.Second)
			if err := e.ReclaimDue(ctx); err != nil {
				t.Fatal(err)
			}
			if n := left(); n != want {
				t.Fatalf("%d documents' keys left a second before the lifetime, want %d", n, want)
			}
			clk.Advance(time.Second)
			if err := e.ReclaimDue(ctx); err != nil {
				t.Fatal(err)
			}
			if n := left(); n != 0 {
				t.Fatalf("%d documents' keys left once the lifetime passed", n)
			}
			it, err := e.store.Iter(ctx, []byte{record.PrefixReclaim}, []byte{record.PrefixReclaim + 1}, false)
			if err != nil {
				t.Fatal(err)
			}
			defer it.Close()
			if it.First() {
				t.Fatalf("a reclaim record is left: %x", it.Key())
			}
		})
	}
}
