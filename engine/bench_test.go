package engine

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
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

// benchTable is YCSB's usertable in miniature: n records of ten 100-byte
// fields under string keys, with an index on field0's first bytes (f).
func benchTable(b *testing.B, n int) *Engine {
	b.Helper()
	e := openTestEngine(b)
	ctx := context.Background()
	pad := strings.Repeat("x", 100)
	var docs []bson.Raw
	for i := range n {
		d := bson.D{{Key: "_id", Value: fmt.Sprintf("user%010d", i)}, {Key: "f", Value: int64(i)}}
		for j := range 10 {
			d = append(d, bson.E{Key: fmt.Sprintf("field%d", j), Value: pad})
		}
		raw, _ := bson.Marshal(d)
		docs = append(docs, raw)
		if len(docs) == 500 || i == n-1 {
			if _, err := e.Insert(ctx, "bench", "usertable", docs, true); err != nil {
				b.Fatal(err)
			}
			docs = nil
		}
	}
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "f", Value: 1}}}, {Key: "name", Value: "f_1"}})
	if _, err := e.CreateIndexes(ctx, "bench", "usertable", []bson.Raw{spec}); err != nil {
		b.Fatal(err)
	}
	return e
}

// benchFind runs find spec and reads its first batch as the server does
// (batchSize 101, 16 MB), reporting the documents per operation.
func benchFind(b *testing.B, e *Engine, spec func(i int) FindSpec) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	docs := 0
	for i := 0; i < b.N; i++ {
		cur, err := e.Find(ctx, "bench", "usertable", spec(i))
		if err != nil {
			b.Fatal(err)
		}
		batch, err := cur.NextBatch(ctx, 101, 16<<20)
		if err != nil {
			b.Fatal(err)
		}
		docs += len(batch)
		_ = cur.Close()
	}
	b.ReportMetric(float64(docs)/float64(b.N), "docs/op")
}

// BenchmarkScanYCSBE is YCSB E's scan: 1 to 100 records from a key on,
// sorted by _id, 50.5 on average.
func BenchmarkScanYCSBE(b *testing.B) {
	const n = 20000
	e := benchTable(b, n)
	benchFind(b, e, func(i int) FindSpec {
		filter, _ := bson.Marshal(bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: fmt.Sprintf("user%010d", i*7919%n)}}}})
		sort, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
		return FindSpec{Filter: filter, Sort: sort, Limit: int64(1 + i%100)}
	})
}

// BenchmarkFindOneIndexed is findOne by an indexed field.
func BenchmarkFindOneIndexed(b *testing.B) {
	const n = 20000
	e := benchTable(b, n)
	benchFind(b, e, func(i int) FindSpec {
		filter, _ := bson.Marshal(bson.D{{Key: "f", Value: int64(i * 7919 % n)}})
		return FindSpec{Filter: filter, Limit: 1}
	})
}

// BenchmarkFindByID is findOne by _id, the server's point read.
func BenchmarkFindByID(b *testing.B) {
	const n = 20000
	e := benchTable(b, n)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, fmt.Sprintf("user%010d", i*7919%n))}
		if d, err := e.FindByID(ctx, "bench", "usertable", id); err != nil || d == nil {
			b.Fatal(d, err)
		}
	}
}
