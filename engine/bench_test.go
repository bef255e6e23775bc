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
