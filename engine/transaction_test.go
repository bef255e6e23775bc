package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// The behaviour checked here is MongoDB's for transactions at snapshot
// isolation: https://www.mongodb.com/docs/manual/core/transactions/ and
// jstests/core/txns (read_own_writes.js, repeatable_reads_in_transaction.js,
// write_conflicts_with_non_txns.js, no_writes_to_system_collections...).

func txnDoc(t *testing.T, d bson.D) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func txnUpdate(t *testing.T, d bson.D) *update.Update {
	t.Helper()
	u, err := update.Compile(txnDoc(t, d), update.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// idsOf lists the _id of every document of db.coll that a read of ctx
// sees, in _id order.
func idsOf(t *testing.T, ctx context.Context, e *Engine, coll string) []int32 {
	t.Helper()
	cur, err := e.Find(ctx, "db", coll, FindSpec{Sort: txnDoc(t, bson.D{{Key: "_id", Value: 1}})})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := cur.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for _, d := range docs {
		ids = append(ids, d.Lookup("_id").Int32())
	}
	return ids
}

func insertIDs(t *testing.T, ctx context.Context, e *Engine, coll string, ids ...int32) error {
	t.Helper()
	var docs []bson.Raw
	for _, id := range ids {
		docs = append(docs, txnDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 0}}))
	}
	res, err := e.Insert(ctx, "db", coll, docs, true)
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return err
}

func wantTxnCode(t *testing.T, err error, code mongoerr.Code, label string) {
	t.Helper()
	me, ok := mongoerr.As(err)
	if !ok || me.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
	if label != "" && !slices.Contains(me.Labels, label) {
		t.Fatalf("error %v has labels %v, want %s", err, me.Labels, label)
	}
}

func openTxnEngine(t *testing.T) *Engine {
	t.Helper()
	e := openOplogEngine(t, t.TempDir(), clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Options{})
	t.Cleanup(func() { e.Close() })
	return e
}

// A transaction reads its snapshot plus its own writes; nobody else sees
// its writes before the commit, everybody after; an abort leaves nothing.
func TestTransactionSnapshotAndVisibility(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	if err := insertIDs(t, bg, e, "c", 1, 2); err != nil {
		t.Fatal(err)
	}
	tx, err := e.BeginTransaction(bg, TransactionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := WithTransaction(bg, tx)
	if err := insertIDs(t, in, e, "c", 3); err != nil {
		t.Fatal(err)
	}
	if err := insertIDs(t, bg, e, "c", 4); err != nil { // after the snapshot
		t.Fatal(err)
	}
	if got := idsOf(t, in, e, "c"); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("the transaction sees %v, want its snapshot and own write [1 2 3]", got)
	}
	if got := idsOf(t, bg, e, "c"); !slices.Equal(got, []int32{1, 2, 4}) {
		t.Fatalf("outside the transaction: %v, want [1 2 4]", got)
	}
	if n, err := e.Count(in, "db", "c", nil, 0, 0, bson.RawValue{}); err != nil || n != 3 {
		t.Fatalf("count in the transaction: %d, %v", n, err)
	}
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t, bg, e, "c"); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Fatalf("after the commit: %v", got)
	}

	tx2, _ := e.BeginTransaction(bg, TransactionOptions{})
	if err := insertIDs(t, WithTransaction(bg, tx2), e, "c", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(WithTransaction(bg, tx2), "db", "c", txnDoc(t, bson.D{{Key: "_id", Value: 1}}), 1, bson.RawValue{}); err != nil {
		t.Fatal(err)
	}
	tx2.Abort()
	if got := idsOf(t, bg, e, "c"); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Fatalf("after an abort: %v", got)
	}
	assertNoLocksHeld(t, e)
}

// Writing a document another open transaction wrote, or one committed
// after the snapshot, is a WriteConflict labelled TransientTransactionError;
// a plain write meeting an open transaction's write waits for it.
func TestTransactionWriteConflicts(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	if err := insertIDs(t, bg, e, "c", 1, 2); err != nil {
		t.Fatal(err)
	}
	inc := txnUpdate(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	byID := func(id int32) bson.Raw { return txnDoc(t, bson.D{{Key: "_id", Value: id}}) }

	t1, _ := e.BeginTransaction(bg, TransactionOptions{})
	t2, _ := e.BeginTransaction(bg, TransactionOptions{})
	if _, err := e.Update(WithTransaction(bg, t1), "db", "c", UpdateSpec{Filter: byID(1), Update: inc}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Update(WithTransaction(bg, t2), "db", "c", UpdateSpec{Filter: byID(1), Update: inc})
	wantTxnCode(t, err, mongoerr.WriteConflict, "TransientTransactionError")
	t2.Abort()

	// A plain write of the same document waits for t1's commit, then
	// applies on top of it.
	done := make(chan error, 1)
	go func() {
		_, err := e.Update(bg, "db", "c", UpdateSpec{Filter: byID(1), Update: inc})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a plain write of a document an open transaction wrote did not wait: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := t1.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d, _ := e.FindByID(bg, "db", "c", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)})
	if n := d.Lookup("n").Int32(); n != 2 {
		t.Fatalf("n = %d after a transaction's and a plain increment, want 2", n)
	}

	// A document committed after the snapshot conflicts.
	t3, _ := e.BeginTransaction(bg, TransactionOptions{})
	if _, err := e.Update(bg, "db", "c", UpdateSpec{Filter: byID(2), Update: inc}); err != nil {
		t.Fatal(err)
	}
	_, err = e.Update(WithTransaction(bg, t3), "db", "c", UpdateSpec{Filter: byID(2), Update: inc})
	wantTxnCode(t, err, mongoerr.WriteConflict, "TransientTransactionError")
	t3.Abort()
	assertNoLocksHeld(t, e)
}

// Two transactions inserting the same unique key: the second conflicts at
// once, whichever commits.
func TestTransactionUniqueKeyConflict(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}})}); err != nil {
		t.Fatal(err)
	}
	t1, _ := e.BeginTransaction(bg, TransactionOptions{})
	t2, _ := e.BeginTransaction(bg, TransactionOptions{})
	ins := func(tx *Transaction, id int32) error {
		res, err := e.Insert(WithTransaction(bg, tx), "db", "c", []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "u", Value: "x"}})}, true)
		if err == nil && len(res.Errors) > 0 {
			err = res.Errors[0].Err
		}
		return err
	}
	if err := ins(t1, 1); err != nil {
		t.Fatal(err)
	}
	wantTxnCode(t, ins(t2, 2), mongoerr.WriteConflict, "TransientTransactionError")
	t2.Abort()
	if err := t1.Commit(bg); err != nil {
		t.Fatal(err)
	}
	t3, _ := e.BeginTransaction(bg, TransactionOptions{})
	wantTxnCode(t, ins(t3, 3), mongoerr.DuplicateKey, "")
	t3.Abort()
}

// Readers never see part of a transaction: transfers between accounts in
// transactions, retried on conflict, while plain and transactional readers
// sum the balances.
func TestTransactionTransfersKeepTheSum(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	const accounts = 6
	for i := range int32(accounts) {
		if _, err := e.Insert(bg, "db", "acct", []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: 100}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	// A read by a list of _ids reads several points: it too must see no
	// part of a transaction.
	all := bson.A{}
	for i := range int32(accounts) {
		all = append(all, i)
	}
	byIDs := txnDoc(t, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: all}}}})
	sum := func(ctx context.Context, filter bson.Raw) int32 {
		cur, err := e.Find(ctx, "db", "acct", FindSpec{Filter: filter})
		if err != nil {
			t.Error(err)
			return -1
		}
		docs, err := cur.All(ctx)
		if err != nil {
			t.Error(err)
			return -1
		}
		s := int32(0)
		for _, d := range docs {
			s += d.Lookup("n").Int32()
		}
		return s
	}
	move := func(from, to int32) error {
		tx, err := e.BeginTransaction(bg, TransactionOptions{})
		if err != nil {
			return err
		}
		in := WithTransaction(bg, tx)
		for _, step := range []struct{ id, by int32 }{{from, -1}, {to, 1}} {
			u := txnUpdate(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: step.by}}}})
			if _, err := e.Update(in, "db", "acct", UpdateSpec{Filter: txnDoc(t, bson.D{{Key: "_id", Value: step.id}}), Update: u}); err != nil {
				tx.Abort()
				return err
			}
		}
		return tx.Commit(bg)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				from, to := int32((w+i)%accounts), int32((w+3*i+1)%accounts)
				if from == to {
					continue
				}
				for {
					err := move(from, to)
					if err == nil {
						break
					}
					if me, ok := mongoerr.As(err); !ok || !slices.Contains(me.Labels, "TransientTransactionError") {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	readers := sync.WaitGroup{}
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if s := sum(bg, nil); s != 100*accounts {
					t.Errorf("a plain read summed %d", s)
					return
				}
				if s := sum(bg, byIDs); s != 100*accounts {
					t.Errorf("a plain read by _ids summed %d", s)
					return
				}
				tx, err := e.BeginTransaction(bg, TransactionOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				s1 := sum(WithTransaction(bg, tx), nil)
				s2 := sum(WithTransaction(bg, tx), byIDs)
				tx.Abort()
				if s1 != 100*accounts || s2 != s1 {
					t.Errorf("a transaction summed %d then %d", s1, s2)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	assertNoLocksHeld(t, e)
}

// A collection whose indexes changed after a transaction's start cannot be
// read in it (SnapshotUnavailable), and a change between a write and the
// commit aborts the commit (WriteConflict).
func TestTransactionCatalogChanges(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	if err := insertIDs(t, bg, e, "c", 1); err != nil {
		t.Fatal(err)
	}
	ix := txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_1"}})
	t1, _ := e.BeginTransaction(bg, TransactionOptions{})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{ix}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Find(WithTransaction(bg, t1), "db", "c", FindSpec{})
	wantTxnCode(t, err, mongoerr.SnapshotUnavailable, "TransientTransactionError")
	t1.Abort()

	t2, _ := e.BeginTransaction(bg, TransactionOptions{})
	if err := insertIDs(t, WithTransaction(bg, t2), e, "c", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DropIndexes(context.Background(), "db", "c", bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "n_1")}); err != nil {
		t.Fatal(err)
	}
	wantTxnCode(t, t2.Commit(bg), mongoerr.WriteConflict, "TransientTransactionError")
	if got := idsOf(t, bg, e, "c"); !slices.Equal(got, []int32{1}) {
		t.Fatalf("after a refused commit: %v", got)
	}

	// A collection created by the transaction's own insert is usable.
	t3, _ := e.BeginTransaction(bg, TransactionOptions{})
	in := WithTransaction(bg, t3)
	if err := insertIDs(t, in, e, "fresh", 1, 2); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t, in, e, "fresh"); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("a collection the transaction created: %v", got)
	}
	if err := t3.Commit(bg); err != nil {
		t.Fatal(err)
	}
}

// A committed transaction is one applyOps oplog entry with its session;
// an aborted one logs nothing. The commit is recorded for a retried
// commitTransaction, across a restart.
func TestTransactionOplogAndRecord(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, dir, clk, Options{})
	bg := context.Background()
	if err := insertIDs(t, bg, e, "c", 1); err != nil {
		t.Fatal(err)
	}
	_, _, last := oplogSince(t, e, e.ClusterTime().Prev())
	s := &Txn{Session: [16]byte{9}, Number: 4}
	tx, _ := e.BeginTransaction(bg, TransactionOptions{Session: s})
	in := WithTransaction(bg, tx)
	if err := insertIDs(t, in, e, "c", 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := insertIDs(t, in, e, "d", 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	aborted, _ := e.BeginTransaction(bg, TransactionOptions{Session: &Txn{Session: [16]byte{9}, Number: 5}})
	if err := insertIDs(t, WithTransaction(bg, aborted), e, "c", 9); err != nil {
		t.Fatal(err)
	}
	aborted.Abort()
	_, raws, _ := oplogSince(t, e, last)
	var txnEntries []bson.Raw
	for _, r := range raws {
		if _, ok := r.Lookup("o", "applyOps").ArrayOK(); ok {
			txnEntries = append(txnEntries, r)
		}
	}
	if len(txnEntries) != 1 {
		t.Fatalf("%d applyOps entries after one commit and one abort, want 1: %v", len(txnEntries), raws)
	}
	ent := txnEntries[0]
	ops, _ := ent.Lookup("o", "applyOps").Array().Values()
	if len(ops) != 3 || ent.Lookup("ns").StringValue() != "admin.$cmd" || ent.Lookup("txnNumber").Int64() != 4 {
		t.Fatalf("the entry of the commit: %v", ent)
	}
	if _, ok := ent.Lookup("lsid").DocumentOK(); !ok {
		t.Fatalf("the entry has no lsid: %v", ent)
	}
	if _, ok := ent.Lookup("prevOpTime").DocumentOK(); !ok {
		t.Fatalf("the entry has no prevOpTime: %v", ent)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openOplogEngine(t, dir, clk, Options{})
	defer e.Close()
	if ok, err := e.TransactionCommitted(context.Background(), &Txn{Session: [16]byte{9}, Number: 4}); err != nil || !ok {
		t.Fatalf("committed transaction 4 after a restart: %v, %v", ok, err)
	}
	if ok, _ := e.TransactionCommitted(context.Background(), &Txn{Session: [16]byte{9}, Number: 5}); ok {
		t.Fatal("the aborted transaction 5 is recorded as committed")
	}
	if got := idsOf(t, bg, e, "c"); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("after a restart: %v", got)
	}
}

// The reaper never waits for, nor purges under, a document an open
// transaction holds; it purges it once the transaction ends, if it is
// still due.
func TestTransactionReaperSkipsHeldDocuments(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clk, Options{})
	defer e.Close()
	bg := context.Background()
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 10}})}); err != nil {
		t.Fatal(err)
	}
	if err := insertIDs(t, bg, e, "c", 1, 2); err != nil {
		t.Fatal(err)
	}
	tx, _ := e.BeginTransaction(bg, TransactionOptions{})
	inc := txnUpdate(t, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if _, err := e.Update(WithTransaction(bg, tx), "db", "c", UpdateSpec{Filter: txnDoc(t, bson.D{{Key: "_id", Value: 1}}), Update: inc}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	n, _, _, err := e.ReapBatch(context.Background(), clk.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the reaper purged %d documents, want only the one no transaction holds", n)
	}
	tx.Abort()
	if n, _, _, err := e.ReapBatch(context.Background(), clk.Now(), 100); err != nil || n != 1 {
		t.Fatalf("after the abort the reaper purged %d (%v), want 1", n, err)
	}
}

// A snapshot read sees the state at its cluster time; a second read at the
// same time sees the same, whatever committed since (a driver's snapshot
// session); a time past the history is SnapshotTooOld, one after the
// cluster time InvalidOptions (MongoDB 5.0's snapshot reads:
// jstests/libs/global_snapshot_reads_util.js, read_at_cluster_time).
func TestSnapshotReads(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	if err := insertIDs(t, bg, e, "c", 1); err != nil {
		t.Fatal(err)
	}
	r1, at, err := e.BeginSnapshotRead(bg, oplog.Timestamp{})
	if err != nil {
		t.Fatal(err)
	}
	if err := insertIDs(t, bg, e, "c", 2); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t, WithTransaction(bg, r1), e, "c"); !slices.Equal(got, []int32{1}) {
		t.Fatalf("a snapshot read sees %v, want [1]", got)
	}
	r1.Abort()
	r2, at2, err := e.BeginSnapshotRead(bg, at)
	if err != nil || at2 != at {
		t.Fatalf("a read at %v: %v at %v", at, err, at2)
	}
	if got := idsOf(t, WithTransaction(bg, r2), e, "c"); !slices.Equal(got, []int32{1}) {
		t.Fatalf("a second read at the same time sees %v, want [1]", got)
	}
	if _, err := e.Insert(WithTransaction(bg, r2), "db", "c", []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: 3}})}, true); err == nil {
		t.Fatal("a write under a snapshot read succeeded")
	}
	r2.Abort()
	r3, at3, err := e.BeginSnapshotRead(bg, oplog.Timestamp{})
	if err != nil || !at.Less(at3) {
		t.Fatalf("a read at the latest time: %v at %v (the first was at %v)", err, at3, at)
	}
	if got := idsOf(t, WithTransaction(bg, r3), e, "c"); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("a read at the latest time sees %v", got)
	}
	r3.Abort()
	// The time of the latest commit, with nothing in flight, is served
	// though no read took it before.
	if err := insertIDs(t, bg, e, "c", 4); err != nil {
		t.Fatal(err)
	}
	latest := e.ClusterTime()
	r4, at4, err := e.BeginSnapshotRead(bg, latest)
	if err != nil || at4 != latest {
		t.Fatalf("a read at the latest commit %v: %v at %v", latest, err, at4)
	}
	if got := idsOf(t, WithTransaction(bg, r4), e, "c"); !slices.Equal(got, []int32{1, 2, 4}) {
		t.Fatalf("a read at the latest commit sees %v", got)
	}
	r4.Abort()
	_, _, err = e.BeginSnapshotRead(bg, e.ClusterTime().Next().Next())
	wantTxnCode(t, err, mongoerr.InvalidOptions, "")
	e.SetSnapshotHistory(0)
	time.Sleep(time.Millisecond) // the history window is in wall time
	_, _, err = e.BeginSnapshotRead(bg, at)
	wantTxnCode(t, err, mongoerr.SnapshotTooOld, "")
}

// A transaction's writes take the commit's time as their _ts: with a
// collection TTL of 40 s, a document written 30 s before its transaction
// committed lives 40 s from the commit (TTL spec: _ts is the document's
// last write).
func TestTransactionStampsCommitTime(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clk, Options{})
	defer e.Close()
	bg := context.Background()
	if _, err := e.CreateIndexes(bg, "db", "c", []bson.Raw{txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 40}})}); err != nil {
		t.Fatal(err)
	}
	tx, _ := e.BeginTransaction(bg, TransactionOptions{})
	if err := insertIDs(t, WithTransaction(bg, tx), e, "c", 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	clk.Advance(35 * time.Second) // 65 s after the insert, 35 s after the commit
	if got := idsOf(t, bg, e, "c"); !slices.Equal(got, []int32{1}) {
		t.Fatalf("35 s after its commit the document is %v, want alive", got)
	}
	if n, _, _, err := e.ReapBatch(bg, clk.Now(), 100); err != nil || n != 0 {
		t.Fatalf("the reaper purged %d (%v) 35 s after the commit", n, err)
	}
	clk.Advance(6 * time.Second)
	if got := idsOf(t, bg, e, "c"); len(got) != 0 {
		t.Fatalf("41 s after its commit the document is %v, want expired", got)
	}
	if n, _, _, err := e.ReapBatch(bg, clk.Now(), 100); err != nil || n != 1 {
		t.Fatalf("the reaper purged %d (%v) 41 s after the commit, want 1", n, err)
	}
}

// Collections and indexes created in a transaction (MongoDB 4.4+): an
// index on a collection the transaction created covers its own documents
// too, and on an existing collection it is refused; an abort drops the
// collection it created while it is empty.
func TestTransactionCreatesCollectionsAndIndexes(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	tx, _ := e.BeginTransaction(bg, TransactionOptions{})
	in := WithTransaction(bg, tx)
	if err := e.CreateCollection(in, "db", "fresh", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(in, "db", "fresh", []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: 1}, {Key: "u", Value: "a"}}), txnDoc(t, bson.D{{Key: "_id", Value: 2}, {Key: "u", Value: bson.A{"b", "c"}}})}, true); err != nil {
		t.Fatal(err)
	}
	ix := txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}})
	if _, err := e.CreateIndexes(in, "db", "fresh", []bson.Raw{ix}); err != nil {
		t.Fatal(err)
	}
	// The unique index knows the transaction's documents already.
	res, err := e.Insert(in, "db", "fresh", []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: 3}, {Key: "u", Value: "c"}})}, true)
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	wantTxnCode(t, err, mongoerr.DuplicateKey, "")
	tx.Abort()
	if e.CollectionExists(bg, "db", "fresh") {
		t.Fatal("the collection an aborted transaction created is still there")
	}

	tx2, _ := e.BeginTransaction(bg, TransactionOptions{})
	in = WithTransaction(bg, tx2)
	if err := insertIDs(t, in, e, "made", 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateIndexes(in, "db", "made", []bson.Raw{txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_1"}})}); err != nil {
		t.Fatal(err)
	}
	if err := tx2.Commit(bg); err != nil {
		t.Fatal(err)
	}
	// The index holds both documents: a scan of it finds them.
	cur, err := e.Find(bg, "db", "made", FindSpec{Filter: txnDoc(t, bson.D{{Key: "n", Value: 0}}), Hint: bson.RawValue{Type: bson.TypeString, Value: bsoncore.AppendString(nil, "n_1")}})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := cur.All(bg)
	if err != nil || len(docs) != 2 {
		t.Fatalf("the index built in the transaction finds %d documents (%v), want 2", len(docs), err)
	}
	if rep, err := e.Validate(bg, "db", "made", true); err != nil || !rep.Valid {
		t.Fatalf("validate after the transaction: %+v, %v", rep, err)
	}

	tx3, _ := e.BeginTransaction(bg, TransactionOptions{})
	_, err = e.CreateIndexes(WithTransaction(bg, tx3), "db", "made", []bson.Raw{txnDoc(t, bson.D{{Key: "key", Value: bson.D{{Key: "z", Value: 1}}}, {Key: "name", Value: "z_1"}})})
	wantTxnCode(t, err, mongoerr.OperationNotSupportedInTransaction, "")
	tx3.Abort()
	if !e.CollectionExists(bg, "db", "made") {
		t.Fatal("an abort dropped a collection it did not create")
	}
}
