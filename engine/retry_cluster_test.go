package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/kvtest"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/mongoerr"
)

// clusterOf is a TiKV mock cluster and the clock its engines share.
type clusterOf struct {
	mock *tikvkv.MockCluster
	clk  *clock.Manual
}

func newClusterOf(t *testing.T) clusterOf {
	t.Helper()
	mock, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	return clusterOf{mock: mock, clk: clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

// open opens an engine on the cluster, as one server of a deployment of
// several; it joins the roster (Member).
func (c clusterOf) open(t *testing.T) *Engine {
	t.Helper()
	s, err := c.mock.Open(tikvkv.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	e := openOplogEngine(t, t.TempDir(), c.clk, Options{Store: kvtest.Contract(s)})
	t.Cleanup(func() { e.Close() })
	if e.Member() == nil {
		t.Fatal("an engine on the mock cluster has no place on the roster")
	}
	return e
}

// A transaction open on one engine and ended by another that does not
// hold it (a commitTransaction retried there) can no longer commit; one
// that committed is found committed by the other; a number recorded by
// the other before the transaction began stops its commit too; a newer
// number leaves nothing recorded.
func TestTransactionOutcomeAcrossEngines(t *testing.T) {
	c := newClusterOf(t)
	a, b := c.open(t), c.open(t)
	bg := context.Background()
	session := [16]byte{7}
	begin := func(n int64, id int32) *Transaction {
		t.Helper()
		tx, err := a.BeginTransaction(bg, TransactionOptions{Session: &Txn{Session: session, Number: n}})
		if err != nil {
			t.Fatal(err)
		}
		if err := insertIDs(t, WithTransaction(bg, tx), a, "c", id); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	end := func(n int64) (TxnOutcome, int64) {
		t.Helper()
		o, newest, err := b.EndUnknownTransaction(bg, &Txn{Session: session, Number: n})
		if err != nil {
			t.Fatal(err)
		}
		return o, newest
	}

	// Open on a, ended by b: a's commit fails, nothing is written.
	tx := begin(1, 1)
	if o, _ := end(1); o != TxnAborted {
		t.Fatalf("ending open transaction 1 on b: outcome %v, want aborted", o)
	}
	wantTxnCode(t, tx.Commit(bg), mongoerr.NoSuchTransaction, "")
	if o, _ := end(1); o != TxnAborted {
		t.Fatalf("ending transaction 1 again: outcome %v, want aborted", o)
	}

	// Committed on a: b finds it committed, and records nothing.
	tx = begin(2, 2)
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if o, _ := end(2); o != TxnCommitted {
		t.Fatalf("ending committed transaction 2 on b: outcome %v, want committed", o)
	}
	if o, err := a.TransactionOutcome(bg, &Txn{Session: session, Number: 2}); err != nil || o != TxnCommitted {
		t.Fatalf("transaction 2 on a: %v, %v", o, err)
	}

	// Ended by b before a began it: the commit finds the number taken.
	if o, _ := end(3); o != TxnAborted {
		t.Fatalf("ending unknown transaction 3 on b: outcome %v, want aborted", o)
	}
	tx = begin(3, 3)
	wantTxnCode(t, tx.Commit(bg), mongoerr.NoSuchTransaction, "")

	// An older number than one recorded: nothing recorded, the newest said.
	if o, newest := end(1); o != TxnUnknown || newest != 3 {
		t.Fatalf("ending transaction 1 after 3: %v, newest %d; want unknown, 3", o, newest)
	}
	if n, ok, err := b.LatestTxnNumber(bg, session); err != nil || !ok || n != 3 {
		t.Fatalf("latest number %d, %v, %v; want 3", n, ok, err)
	}
	if got := idsOf(t, bg, a, "c"); !slices.Equal(got, []int32{2}) {
		t.Fatalf("documents %v, want only transaction 2's", got)
	}
}

// A retryable write run on one engine is answered from its record on
// another: not applied again, with the first run's result.
func TestRetryRecordsAcrossEngines(t *testing.T) {
	// b opens once a has created the collection, so that it knows it
	// whether or not the catalog follows changes across engines.
	c := newClusterOf(t)
	a := c.open(t)
	bg := context.Background()
	if err := a.CreateCollection(bg, "db", "c", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := c.open(t)
	filter := txnDoc(t, bson.D{{Key: "_id", Value: 1}})
	inc := txnUpdate(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	run := func(e *Engine) UpdateResult {
		t.Helper()
		s := &Txn{Session: [16]byte{8}, Number: 1}
		if err := e.CheckTxn(bg, s); err != nil {
			t.Fatal(err)
		}
		res, err := e.Update(bg, "db", "c", UpdateSpec{Filter: filter, Update: inc, Upsert: true, Txn: s})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, again := run(a), run(b)
	if first.Matched != 0 || first.Upserted.Type == 0 || again.Matched != first.Matched || !again.Upserted.Equal(first.Upserted) {
		t.Fatalf("retried upsert on b: %+v, the first run on a %+v", again, first)
	}
	cur, err := a.Find(bg, "db", "c", FindSpec{})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := cur.All(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Lookup("n").Int32() != 1 {
		t.Fatalf("documents %v, want one with n 1", docs)
	}
}

// A session checked out on one engine waits on another until released,
// or until the request's context ends; another session does not wait.
func TestSessionCheckOutAcrossEngines(t *testing.T) {
	c := newClusterOf(t)
	a, b := c.open(t), c.open(t)
	bg := context.Background()
	session := [16]byte{9}
	release, err := a.CheckOutSession(bg, session)
	if err != nil {
		t.Fatal(err)
	}
	other, err := b.CheckOutSession(bg, [16]byte{10})
	if err != nil {
		t.Fatal(err)
	}
	other()
	short, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if r, err := b.CheckOutSession(short, session); err == nil {
		r()
		t.Fatal("b checked out a session a holds")
	}
	got := make(chan error, 1)
	go func() {
		r, err := b.CheckOutSession(bg, session)
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b could not check the session out after a released it")
	}
}
