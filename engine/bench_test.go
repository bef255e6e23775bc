package engine

import (
	"context"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkInsertParallel measures the engine's synced single-document
// inserts from 16 goroutines, without the network, to compare with
// BenchmarkPebbleSyncParallel: the cost the engine adds to a durable write.
func BenchmarkInsertParallel(b *testing.B) {
	e := openTestEngine(b)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: next.Add(1)}, {Key: "pad", Value: "0123456789012345678901234567890123456789"}})
			if _, err := e.Insert(context.Background(), "bench", "c", []bson.Raw{d}, true); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
