package engine

import (
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"
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
			if _, err := e.Insert("bench", "c", []bson.Raw{d}, true); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPebbleSyncParallel is the ceiling: one synced Set per commit.
func BenchmarkPebbleSyncParallel(b *testing.B) {
	db, err := pebble.Open(b.TempDir(), &pebble.Options{Logger: pebbleLogger{s: zap.NewNop().Sugar(), fatal: func(msg string) { panic(msg) }}})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var next atomic.Int64
	val := make([]byte, 200)
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := bson.Raw(nil)
			k = append(k, byte(next.Add(1)>>8), byte(next.Load()))
			if err := db.Set(append([]byte("k"), k...), val, pebble.Sync); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
