package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
)

// BenchmarkReap measures the reaper's cost per purged document: a
// collection with the Cosmos-style _ts TTL and a root ttl field on every
// document, 1 KB each, all due at once, purged by whole passes as the
// reaper runs them. It reports purged documents per second of one
// goroutine, without foreground load; lethe-load's TTL workload measures
// the reaper beside foreground reads.
func BenchmarkReap(b *testing.B) {
	const docs = 100_000
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(b.TempDir(), Options{Clock: clk, NoReaper: true, Oplog: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: -1}})
	pad := strings.Repeat("x", 1000)
	var total time.Duration
	purged := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{spec}); err != nil {
			b.Fatal(err)
		}
		batch := make([]bson.Raw, 0, 1000)
		for n := 0; n < docs; n++ {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int64(i*docs + n)}, {Key: "ttl", Value: int32(1 + n%60)}, {Key: "pad", Value: pad}})
			batch = append(batch, d)
			if len(batch) == cap(batch) {
				if _, err := e.Insert(ctx, "db", "c", batch, false); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		clk.Advance(61 * time.Second)
		b.StartTimer()
		start := time.Now()
		n, err := e.Reaper().Pass()
		total += time.Since(start)
		if err != nil || n != docs {
			b.Fatalf("pass purged %d, %v; want %d", n, err, docs)
		}
		purged += n
	}
	b.ReportMetric(float64(purged)/total.Seconds(), "docs/s")
	b.ReportMetric(float64(total.Nanoseconds())/float64(purged)/1000, "us/doc")
}
