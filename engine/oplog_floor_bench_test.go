package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/oplog"
)

// BenchmarkOplogOldest reads the oplog's oldest entry after many trims,
// from the start of the oplog's key range (as every read from the start
// did) and from the log's floor (as they do now): the trimmed entries stay
// in the store as deletions until compactions drop them, and a read from
// the start steps over them.
func BenchmarkOplogOldest(b *testing.B) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(b.TempDir(), Options{Clock: clk, NoReaper: true, Oplog: true, OplogMaxBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	pad := strings.Repeat("x", 1000)
	batch := make([]bson.Raw, 0, 100)
	for i := range 50_000 {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "p", Value: pad}})
		batch = append(batch, d)
		if len(batch) == cap(batch) {
			if _, err := e.Insert(ctx, "db", "c", batch, true); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
			if _, err := e.TrimOplog(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	floor := e.Oplog().Floor()
	if floor.IsZero() {
		b.Fatal("no trim raised the floor")
	}
	for _, c := range []struct {
		name string
		from oplog.Timestamp
	}{{"from-start", oplog.Timestamp{}}, {"from-floor", floor}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ts, err := oplogstore.Oldest(ctx, e.store, c.from)
				if err != nil || ts != floor {
					b.Fatalf("oldest %v, %v; want the floor %v", ts, err, floor)
				}
			}
		})
	}
}
