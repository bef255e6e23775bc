package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// TestSharedOplogDeadServer: a server with an entry appended but not
// committed holds the other servers' readers below it while its lease
// holds; once it stops renewing (it died, or is cut off) and the lease runs
// out, the others read past it, and it may commit nothing more, so what
// they read past stays as they read it.
func TestSharedOplogDeadServer(t *testing.T) {
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	es := sharedEngines(t, 2, Options{NoReaper: true, Oplog: true, Cluster: ClusterOptions{Lease: lease}})
	a, b := es[0], es[1]
	doc := func(id string) []bson.Raw {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}})
		return []bson.Raw{d}
	}
	if _, err := a.Insert(ctx, "db", "c", doc("a0"), true); err != nil {
		t.Fatal(err)
	}

	// b appends an entry and stalls before its commit.
	tx, err := b.store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	raw, _ := bson.Marshal(bson.D{{Key: "msg", Value: "stalled"}})
	stalled, err := b.oplog.AppendContext(ctx, tx, []oplog.Entry{{Op: oplog.Noop, O: raw}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Insert(ctx, "db", "c", doc("a1"), true); err != nil {
		t.Fatal(err)
	}
	after := a.oplog.Last()
	if !stalled.First.Less(after) {
		t.Fatalf("a's insert at %v, not after b's entry at %v appended before it", after, stalled.First)
	}
	// A few floor refreshes later, a still reads below b's entry.
	time.Sleep(5 * oplog.SharedInterval)
	if v := a.oplog.Visible(); !v.Less(stalled.First) {
		t.Fatalf("a's visible point %v passed b's uncommitted entry at %v", v, stalled.First)
	}

	// b stops renewing its lease without leaving the roster.
	b.cluster.stop()
	<-b.cluster.done
	<-b.cluster.oplogDone
	wctx, cancel := context.WithTimeout(ctx, 10*lease)
	defer cancel()
	if _, err := a.oplog.Wait(wctx, after.Prev()); err != nil {
		t.Fatalf("a's visible point %v stayed below its own insert at %v after b's lease ran out: %v", a.oplog.Visible(), after, err)
	}
	// b may not commit what it appended, nor any other write.
	if err := b.leaseHolds(); mongoerr.CodeOf(err) != mongoerr.ShutdownInProgress {
		t.Fatalf("b's lease check after its lease ran out: %v, want ShutdownInProgress", err)
	}
	if _, err := b.Insert(ctx, "db", "c", doc("b0"), true); err == nil {
		t.Fatal("b inserted after its lease ran out")
	}
	stalled.Finish(false)
}

// sharedEngines opens n engines with opts, each a server of its own on one
// new TiKV mock cluster, closed when the test ends.
func sharedEngines(t *testing.T, n int, opts Options) []*Engine {
	t.Helper()
	mock, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	var out []*Engine
	for range n {
		s, err := mock.Open(tikvkv.Options{Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Store = s
		e, err := Open(t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		out = append(out, e)
	}
	return out
}
