package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// cpuNow is the process's user and system CPU time.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU runs fn and reports the process CPU per op, which a loaded
// machine skews less than wall time does.
func reportCPU(b *testing.B, fn func()) {
	b.ResetTimer()
	start := cpuNow(b)
	fn()
	b.StopTimer()
	b.ReportMetric(float64(cpuNow(b)-start)/float64(b.N), "cpu-ns/op")
}

// benchDocs preloads n documents {_id: i, n: 0, pad} of about 200 bytes,
// as lethe-load's update workload does.
func benchDocs(b *testing.B, e *Engine, n int) {
	pad := strings.Repeat("x", 160)
	for lo := 0; lo < n; lo += 1000 {
		var docs []bson.Raw
		for i := lo; i < min(lo+1000, n); i++ {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int64(i)}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}})
			docs = append(docs, d)
		}
		if _, err := e.Insert(context.Background(), "bench", "c", docs, true); err != nil {
			b.Fatal(err)
		}
	}
}

// openBenchEngine opens an engine on the system clock, so that every
// write moves the document's _ts, as in a server; replSet keeps the oplog
// as a replica-set member does.
func openBenchEngine(b *testing.B, replSet bool) *Engine {
	e, err := Open(b.TempDir(), Options{NoReaper: true, Oplog: replSet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// benchSession is a retryable-write session of one benchmark goroutine,
// as drivers make every write in replica-set mode: a new transaction
// number per write.
type benchSession struct {
	id  [16]byte
	num int64
}

func (s *benchSession) next(b *testing.B, e *Engine, on bool) *Txn {
	if !on {
		return nil
	}
	s.num++
	t := &Txn{Session: s.id, Number: s.num}
	// As the server does before each retryable write.
	if err := e.CheckTxn(context.Background(), t); err != nil {
		b.Error(err)
	}
	return t
}

var benchSessions atomic.Uint64

func newBenchSession() *benchSession {
	s := &benchSession{}
	binary.BigEndian.PutUint64(s.id[:], benchSessions.Add(1))
	return s
}

// BenchmarkInsertOneCPU is lethe-load's insert workload in the engine: 16
// goroutines each inserting one 200-byte document per synced commit;
// replset adds the oplog and retryable writes.
func BenchmarkInsertOneCPU(b *testing.B) {
	for _, replSet := range []bool{false, true} {
		b.Run(fmt.Sprintf("replset=%v", replSet), func(b *testing.B) {
			e := openBenchEngine(b, replSet)
			pad := strings.Repeat("x", 160)
			b.SetParallelism(8)
			b.ReportAllocs()
			reportCPU(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					s := newBenchSession()
					for pb.Next() {
						d, _ := bson.Marshal(bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}})
						var opts []WriteOptions
						if t := s.next(b, e, replSet); t != nil {
							opts = append(opts, WriteOptions{Txn: t, StmtIDs: []int32{0}})
						}
						if _, err := e.Insert(context.Background(), "bench", "c", []bson.Raw{d}, true, opts...); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// BenchmarkUpdateByIDCPU is lethe-load's update workload in the engine:
// 16 goroutines each $inc-ing a random one of 10000 documents by _id;
// replset adds the oplog and retryable writes.
func BenchmarkUpdateByIDCPU(b *testing.B) {
	for _, replSet := range []bool{false, true} {
		b.Run(fmt.Sprintf("replset=%v", replSet), func(b *testing.B) {
			e := openBenchEngine(b, replSet)
			const docs = 10000
			benchDocs(b, e, docs)
			u, err := CompileUpdateDoc(mustMarshal(b, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}))
			if err != nil {
				b.Fatal(err)
			}
			var seed atomic.Uint64
			b.SetParallelism(8)
			b.ReportAllocs()
			reportCPU(b, func() {
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(seed.Add(1), 0))
					s := newBenchSession()
					for pb.Next() {
						f := mustMarshal(b, bson.D{{Key: "_id", Value: rng.Int64N(docs)}})
						res, err := e.Update(context.Background(), "bench", "c", UpdateSpec{Filter: f, Update: u, Txn: s.next(b, e, replSet)})
						if err != nil || res.Matched != 1 {
							b.Errorf("update: %+v %v", res, err)
							return
						}
					}
				})
			})
		})
	}
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
// (batchSize 101, 16 MB, appended to a reply buffer it reuses), reporting
// the documents per operation.
func benchFind(b *testing.B, e *Engine, spec func(i int) FindSpec) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	docs := 0
	var reply []byte
	for i := 0; i < b.N; i++ {
		cur, err := e.Find(ctx, "bench", "usertable", spec(i))
		if err != nil {
			b.Fatal(err)
		}
		n := cur.nReturned
		if reply, err = cur.AppendBatch(ctx, reply[:0], 101, 16<<20); err != nil {
			b.Fatal(err)
		}
		docs += int(cur.nReturned - n)
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
