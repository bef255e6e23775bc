package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"go.uber.org/zap"
)

// countingStore counts the store calls that cost a round trip on TiKV:
// oracle timestamps, transactions and reads (scans and snapshots).
type countingStore struct {
	kv.Store
	now, txns, iters atomic.Int64
}

func (c *countingStore) Unwrap() kv.Store { return c.Store }

func (c *countingStore) Now(ctx context.Context) (kv.Timestamp, error) {
	c.now.Add(1)
	return c.Store.Now(ctx)
}

func (c *countingStore) Begin(ctx context.Context, o kv.TxnOptions) (kv.Txn, error) {
	c.txns.Add(1)
	return c.Store.Begin(ctx, o)
}

func (c *countingStore) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	c.iters.Add(1)
	return c.Store.Iter(ctx, lo, hi, reverse)
}

// Snapshot is counted with the scans: bucketkv reads through one.
func (c *countingStore) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	c.iters.Add(1)
	return c.Store.Snapshot(ctx)
}

// BenchmarkSharedOplog measures what sharing the oplog with other servers
// (oplog.Log.Share) costs a server on the TiKV mock: the store calls of
// its floor loop while idle (per second) and while it inserts (per
// insert, the inserts' own calls included), and the inserts' latency.
func BenchmarkSharedOplog(b *testing.B) {
	dir := b.TempDir()
	mock, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		b.Fatal(err)
	}
	defer mock.Close()
	s, err := mock.Open(tikvkv.Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	cs := &countingStore{Store: s}
	e, err := Open(dir, Options{Store: cs, NoReaper: true, Oplog: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if !e.Oplog().Shared() {
		b.Fatal("the oplog is not shared on a TiKV store")
	}
	ctx := context.Background()
	doc, _ := bson.Marshal(bson.D{{Key: "x", Value: 1}})
	if _, err := e.Insert(ctx, "db", "c", []bson.Raw{doc}, true); err != nil {
		b.Fatal(err)
	}
	// Idle: past idleAfter, the loop reads the floors but publishes none.
	time.Sleep(1500 * time.Millisecond)
	n0, t0, i0 := cs.now.Load(), cs.txns.Load(), cs.iters.Load()
	time.Sleep(time.Second)
	idleNow, idleTxns, idleReads := cs.now.Load()-n0, cs.txns.Load()-t0, cs.iters.Load()-i0

	b.ResetTimer()
	n0, t0, i0 = cs.now.Load(), cs.txns.Load(), cs.iters.Load()
	for i := 0; i < b.N; i++ {
		d, _ := bson.Marshal(bson.D{{Key: "i", Value: i}})
		if _, err := e.Insert(ctx, "db", "c", []bson.Raw{d}, true); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cs.now.Load()-n0)/float64(b.N), "now/op")
	b.ReportMetric(float64(cs.txns.Load()-t0)/float64(b.N), "txns/op")
	b.ReportMetric(float64(cs.iters.Load()-i0)/float64(b.N), "reads/op")
	b.ReportMetric(float64(idleNow), "idle-now/s")
	b.ReportMetric(float64(idleTxns), "idle-txns/s")
	b.ReportMetric(float64(idleReads), "idle-reads/s")
}
