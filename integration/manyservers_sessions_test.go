package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Sessions across servers (issue 22): a retryable write's statements and a
// transaction's outcome are recorded in the store, so that a retry sent to
// another server after a failover is answered from the record, as mongod
// answers from its config.transactions after a failover
// (jstests/replsets/retryable_writes_failover.js).

// clusterLsid is a session id of its own for each subtest.
func clusterLsid(b byte) bson.D {
	id := []byte("lethe-sessions-0")
	id[15] = b
	return bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id}}}
}

// createOnAll creates collections of db app through the first server;
// every server knows them once create has answered.
func createOnAll(t *testing.T, servers []*testServer, colls ...string) {
	t.Helper()
	for _, c := range colls {
		if err := servers[0].Client.Database("app").CreateCollection(testCtx(t), c); err != nil {
			t.Fatal(err)
		}
	}
}

// sameReply compares the fields of a write's reply that a retry must
// repeat.
func sameReply(t *testing.T, what string, first, again bson.Raw, fields ...string) {
	t.Helper()
	for _, f := range fields {
		a, b := first.Lookup(f), again.Lookup(f)
		if !a.Equal(b) {
			t.Errorf("%s: %s is %v on the retry, %v the first time\nfirst: %v\nretry: %v", what, f, b, a, first, again)
		}
	}
}

// testManyServersRetryableWrites: a retryable write of each kind run on one
// server and sent again to the other two, with the same lsid, txnNumber
// and statements, is not applied again and answers what the first run
// did, upserted _id and findAndModify's image included (mongod answers a
// retried statement from its record: write_ops_exec.cpp's
// performInserts/performUpdates, and findAndModify's retried image in
// find_and_modify.cpp); an older txnNumber on another server is
// TransactionTooOld (225), as mongod answers it on the session's node.
func testManyServersRetryableWrites(t *testing.T) {
	servers := startCluster(t, 3)
	createOnAll(t, servers, "c")
	conns := make([]*rawConn, len(servers))
	for i, ts := range servers {
		conns[i] = dialRaw(t, ts)
	}
	lsid := clusterLsid(1)
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	cases := []struct {
		name   string
		cmd    bson.D
		fields []string
	}{
		{"insert batch", retryCmd(lsid, 1, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{
			bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "i"}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "i"}},
		}}), []string{"n", "writeErrors"}},
		{"update upsert batch", retryCmd(lsid, 2, bson.E{Key: "update", Value: "c"}, bson.E{Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: "u"}}}, {Key: "u", Value: inc}, {Key: "upsert", Value: true}},
			bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: "u"}}}, {Key: "u", Value: inc}},
			bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: "i"}}}, {Key: "u", Value: inc}, {Key: "multi", Value: true}},
		}}), []string{"n", "nModified", "upserted", "writeErrors"}},
		{"findAndModify upsert", retryCmd(lsid, 3, bson.E{Key: "findAndModify", Value: "c"},
			bson.E{Key: "query", Value: bson.D{{Key: "k", Value: "f"}}}, bson.E{Key: "update", Value: inc},
			bson.E{Key: "upsert", Value: true}, bson.E{Key: "new", Value: true}), []string{"value", "lastErrorObject"}},
		{"findAndModify update", retryCmd(lsid, 4, bson.E{Key: "findAndModify", Value: "c"},
			bson.E{Key: "query", Value: bson.D{{Key: "k", Value: "f"}}}, bson.E{Key: "update", Value: inc}), []string{"value", "lastErrorObject"}},
		{"delete", retryCmd(lsid, 5, bson.E{Key: "delete", Value: "c"}, bson.E{Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}},
			bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: "u"}}}, {Key: "limit", Value: 0}},
		}}), []string{"n", "writeErrors"}},
		{"findAndModify remove", retryCmd(lsid, 6, bson.E{Key: "findAndModify", Value: "c"},
			bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 2}}}, bson.E{Key: "remove", Value: true}), []string{"value", "lastErrorObject"}},
	}
	for i, c := range cases {
		first := conns[i%3].command(c.cmd)
		if lookup(t, first, "ok").AsFloat64() != 1 {
			t.Fatalf("%s on server %d: %v", c.name, i%3, first)
		}
		if first.Lookup("retriedStmtIds").Type != 0 || first.Lookup("retriedStmtId").Type != 0 {
			t.Errorf("%s, run the first time, names retried statements: %v", c.name, first)
		}
		for j := 1; j < 3; j++ {
			again := conns[(i+j)%3].command(c.cmd)
			what := fmt.Sprintf("%s retried on server %d", c.name, (i+j)%3)
			if lookup(t, again, "ok").AsFloat64() != 1 {
				t.Fatalf("%s: %v", what, again)
			}
			sameReply(t, what, first, again, c.fields...)
			wantRetried(t, what, again, c.cmd)
		}
	}
	// Each statement ran once: the upserted document was incremented by
	// the upsert and the second statement (n 2), those of k "i" once, the
	// findAndModify's twice; then the deletes took _id 1 and 2 and the
	// upserted one.
	docs := servers[0].Client.Database("app").Collection("c")
	cur, err := docs.Find(testCtx(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var got []bson.M
	if err := cur.All(testCtx(t), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0]["k"] != "f" || got[0]["n"] != int32(2) {
		t.Errorf("documents %v, want only k f with n 2", got)
	}

	// An older number than one another server ran is TransactionTooOld,
	// wherever it comes; so is the retry of a statement of it.
	old := retryCmd(lsid, 5, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 9}}}})
	for i, raw := range conns {
		reply := raw.command(old)
		if lookup(t, reply, "ok").AsFloat64() != 0 || lookup(t, reply, "code").AsInt64() != 225 {
			t.Errorf("txnNumber 5 on server %d after 6 ran: %v, want TransactionTooOld (225)", i, reply)
		}
	}

	// A batch retried on another server with a statement more runs only
	// the new one (write_ops_exec.cpp skips the executed statements).
	ins := retryCmd(lsid, 7, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 10}}}})
	if reply := conns[0].command(ins); lookup(t, reply, "n").AsInt64() != 1 {
		t.Fatalf("insert of _id 10: %v", reply)
	}
	ins = retryCmd(lsid, 7, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 10}}, bson.D{{Key: "_id", Value: 11}}}})
	reply := conns[1].command(ins)
	if lookup(t, reply, "n").AsInt64() != 2 || reply.Lookup("writeErrors").Type != 0 {
		t.Fatalf("insert of _id 10 and 11 retried on server 1: %v", reply)
	}
	if ids := reply.Lookup("retriedStmtIds"); ids.String() != "[{\"$numberInt\":\"0\"}]" {
		t.Errorf("insert of _id 10 and 11 retried on server 1: retriedStmtIds %v, want [0]", ids)
	}
	if n := count(t, docs, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{10, 11}}}}}); n != 2 {
		t.Errorf("%d of _id 10 and 11, want 2", n)
	}
}

// wantRetried checks that the reply of a retried write names its
// statements as mongod's does: every statement of a write command in
// retriedStmtIds (write_commands.cpp's populateReply), a findAndModify's
// in retriedStmtId (find_and_modify.cpp); a statement's id is its index,
// as drivers send none.
func wantRetried(t *testing.T, what string, reply bson.Raw, cmd bson.D) {
	t.Helper()
	var stmts int
	for _, e := range cmd {
		if a, ok := e.Value.(bson.A); ok && (e.Key == "documents" || e.Key == "updates" || e.Key == "deletes") {
			stmts = len(a)
		}
	}
	if stmts == 0 {
		if v, ok := reply.Lookup("retriedStmtId").AsInt64OK(); !ok || v != 0 {
			t.Errorf("%s: retriedStmtId %v, want 0: %v", what, reply.Lookup("retriedStmtId"), reply)
		}
		return
	}
	arr, ok := reply.Lookup("retriedStmtIds").ArrayOK()
	if !ok {
		t.Errorf("%s: no retriedStmtIds: %v", what, reply)
		return
	}
	vals, _ := arr.Values()
	if len(vals) != stmts {
		t.Errorf("%s: retriedStmtIds %v, want %d statements", what, arr, stmts)
		return
	}
	for i, v := range vals {
		if id, _ := v.AsInt64OK(); id != int64(i) {
			t.Errorf("%s: retriedStmtIds %v, want 0 to %d", what, arr, stmts-1)
			return
		}
	}
}

// clusterTxnCmd is a raw command of transaction n in session lsid.
func clusterTxnCmd(lsid bson.D, n int64, start bool, db string, cmd ...bson.E) bson.D {
	out := append(bson.D(cmd), bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: n}, bson.E{Key: "autocommit", Value: false})
	if start {
		out = append(out, bson.E{Key: "startTransaction", Value: true})
	}
	return append(out, bson.E{Key: "$db", Value: db})
}

// wantClusterCode checks that reply failed with code and, if label is not
// empty, carries it among its errorLabels.
func wantClusterCode(t *testing.T, what string, reply bson.Raw, code int64, label string) {
	t.Helper()
	if reply.Lookup("ok").AsFloat64() != 0 || reply.Lookup("code").AsInt64() != code {
		t.Errorf("%s: %v, want code %d", what, reply, code)
		return
	}
	if label == "" {
		return
	}
	var labels []string
	if arr, ok := reply.Lookup("errorLabels").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			labels = append(labels, v.StringValue())
		}
	}
	if !slices.Contains(labels, label) {
		t.Errorf("%s: labels %v, want %s: %v", what, labels, label, reply)
	}
}

func wantClusterOK(t *testing.T, what string, reply bson.Raw) {
	t.Helper()
	if reply.Lookup("ok").AsFloat64() != 1 {
		t.Fatalf("%s: %v", what, reply)
	}
}

// testManyServersTransactions: a transaction's statements run on one
// server (as mongos pins them); its commitTransaction retried on another
// server after a lost reply answers ok when it committed, and
// abortTransaction there TransactionCommitted (256); a commit on another
// server of a transaction that aborted, or never committed, is
// NoSuchTransaction (251) with TransientTransactionError, as mongod
// answers for a transaction number it holds no record of
// (TransactionParticipant's _continueMultiDocumentTransaction;
// error_labels.cpp), and the transaction left open on its own server can
// no longer commit, so that the driver's retry of the whole transaction
// does not apply it twice. A number older than one another server
// committed is TransactionTooOld (225).
func testManyServersTransactions(t *testing.T) {
	servers := startCluster(t, 3)
	createOnAll(t, servers, "t")
	a, b, c := dialRaw(t, servers[0]), dialRaw(t, servers[1]), dialRaw(t, servers[2])
	lsid := clusterLsid(2)
	insert := func(n int64, start bool, id int) bson.D {
		return clusterTxnCmd(lsid, n, start, "app", bson.E{Key: "insert", Value: "t"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}})
	}
	commit := func(n int64) bson.D {
		return clusterTxnCmd(lsid, n, false, "admin", bson.E{Key: "commitTransaction", Value: 1})
	}
	abort := func(n int64) bson.D {
		return clusterTxnCmd(lsid, n, false, "admin", bson.E{Key: "abortTransaction", Value: 1})
	}
	coll := servers[0].Client.Database("app").Collection("t")

	// Committed on A: the commit retried on B and C answers ok, an abort
	// there TransactionCommitted.
	wantClusterOK(t, "insert in transaction 1 on A", a.command(insert(1, true, 1)))
	wantClusterOK(t, "insert in transaction 1 on A", a.command(insert(1, false, 2)))
	wantClusterOK(t, "commit of 1 on A", a.command(commit(1)))
	wantClusterOK(t, "commit of 1 retried on B", b.command(commit(1)))
	wantClusterOK(t, "commit of 1 retried on C", c.command(commit(1)))
	wantClusterCode(t, "abort of 1 on C", c.command(abort(1)), 256, "")
	wantIDs(t, coll, bson.D{}, 1, 2)

	// A retryable write under a committed transaction's number, on a
	// server that never saw the session, is refused as on the session's
	// node (IncompleteTransactionHistory, 217), and the commit stands.
	other := clusterLsid(5)
	wantClusterOK(t, "insert in another session's transaction 1 on A", a.command(clusterTxnCmd(other, 1, true, "app",
		bson.E{Key: "insert", Value: "t"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 50}}}})))
	wantClusterOK(t, "commit of the other session's 1 on A", a.command(clusterTxnCmd(other, 1, false, "admin", bson.E{Key: "commitTransaction", Value: 1})))
	wantClusterCode(t, "retryable write 1 on B after transaction 1 committed on A",
		b.command(retryCmd(other, 1, bson.E{Key: "insert", Value: "t"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 51}}}})), 217, "")
	wantClusterOK(t, "commit of the other session's 1 retried on B", b.command(clusterTxnCmd(other, 1, false, "admin", bson.E{Key: "commitTransaction", Value: 1})))
	if n := count(t, coll, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 50}}}}); n != 1 {
		t.Errorf("%d documents of the other session, want 1 (its transaction's)", n)
	}
	if _, err := coll.DeleteOne(testCtx(t), bson.D{{Key: "_id", Value: 50}}); err != nil {
		t.Fatal(err)
	}

	// Aborted on A: a commit on B is NoSuchTransaction.
	wantClusterOK(t, "insert in transaction 2 on A", a.command(insert(2, true, 3)))
	wantClusterOK(t, "abort of 2 on A", a.command(abort(2)))
	wantClusterCode(t, "commit of 2, aborted on A, on B", b.command(commit(2)), 251, "TransientTransactionError")
	wantClusterCode(t, "commit of 2 on A", a.command(commit(2)), 251, "TransientTransactionError")

	// Open on A and never committed: a commit on B is NoSuchTransaction,
	// and A can no longer commit it.
	wantClusterOK(t, "insert in transaction 3 on A", a.command(insert(3, true, 4)))
	wantClusterCode(t, "commit of 3, open on A, on B", b.command(commit(3)), 251, "TransientTransactionError")
	wantClusterCode(t, "commit of 3 on A after B refused it", a.command(commit(3)), 251, "TransientTransactionError")
	wantClusterCode(t, "commit of 3 retried on C", c.command(commit(3)), 251, "TransientTransactionError")
	wantIDs(t, coll, bson.D{}, 1, 2)

	// The driver runs the transaction again under a new number, on
	// another server: it commits once.
	wantClusterOK(t, "insert in transaction 4 on C", c.command(insert(4, true, 4)))
	wantClusterOK(t, "commit of 4 on C", c.command(commit(4)))
	wantClusterOK(t, "commit of 4 retried on A", a.command(commit(4)))
	wantIDs(t, coll, bson.D{}, 1, 2, 4)

	// Older numbers than the one C committed are too old everywhere, A
	// included, which last knew 3.
	wantClusterCode(t, "start of 3 on A after 4 committed on C", a.command(insert(3, true, 5)), 225, "")
	wantClusterCode(t, "commit of 3 on A after 4 committed on C", a.command(commit(3)), 225, "")
	wantClusterCode(t, "retryable write 2 on B after 4 committed on C",
		b.command(retryCmd(lsid, 2, bson.E{Key: "insert", Value: "t"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 6}}}})), 225, "")
	wantIDs(t, coll, bson.D{}, 1, 2, 4)

	// A retryable write on B under a newer number ends A's open
	// transaction: A's commit of it is too old, as on mongod, where the
	// newer number aborts the open transaction.
	wantClusterOK(t, "insert in transaction 5 on A", a.command(insert(5, true, 7)))
	wantClusterOK(t, "retryable write 6 on B", b.command(retryCmd(lsid, 6, bson.E{Key: "insert", Value: "t"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 8}}}})))
	wantClusterCode(t, "commit of 5 on A after retryable write 6 on B", a.command(commit(5)), 225, "")
	wantIDs(t, coll, bson.D{}, 1, 2, 4, 8)

	// An abortTransaction retried on another server ends the transaction
	// open on A just as well.
	wantClusterOK(t, "insert in transaction 7 on A", a.command(insert(7, true, 9)))
	wantClusterCode(t, "abort of 7, open on A, on C", c.command(abort(7)), 251, "TransientTransactionError")
	wantClusterCode(t, "commit of 7 on A after C ended it", a.command(commit(7)), 251, "TransientTransactionError")
	wantIDs(t, coll, bson.D{}, 1, 2, 4, 8)
}

// testManyServersSessionEndedElsewhere: a session that ends on one server
// (endSessions, or its timeout there while the driver uses another
// server) leaves the records another server wrote within the timeout, so
// that a retry of that server's write is still answered from them; the
// records go with the session's timeout, as mongod's config.transactions
// entries go when the session's record does (the transaction reaper), not
// at endSessions.
func testManyServersSessionEndedElsewhere(t *testing.T) {
	servers := startCluster(t, 3)
	createOnAll(t, servers, "e")
	a, b, c := dialRaw(t, servers[0]), dialRaw(t, servers[1]), dialRaw(t, servers[2])
	lsid := clusterLsid(3)
	inc := func(n int64) bson.D {
		return retryCmd(lsid, n, bson.E{Key: "update", Value: "e"}, bson.E{Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}},
		}})
	}
	wantClusterOK(t, "update 1 on B", b.command(inc(1)))
	servers[0].Clock.Advance(10 * time.Minute)
	wantClusterOK(t, "update 2 on A", a.command(inc(2)))
	wantClusterOK(t, "endSessions on B", b.command(bson.D{{Key: "endSessions", Value: bson.A{lsid}}, {Key: "$db", Value: "admin"}}))
	reply := c.command(inc(2))
	wantClusterOK(t, "update 2 retried on C", reply)
	if n := lookup(t, reply, "n").AsInt64(); n != 1 {
		t.Errorf("update 2 retried on C: n %d, want 1: %v", n, reply)
	}
	var doc bson.M
	if err := servers[0].Client.Database("app").Collection("e").FindOne(testCtx(t), bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["n"] != int32(2) {
		t.Errorf("document %v, %v; want n 2: update 2 applied once", doc, err)
	}
}

// testManyServersConcurrentRetries: the same retryable write sent at once
// to the three servers (a driver's retry reaching another server while
// the first attempt still runs) is applied once, and all three answer
// alike: a session's retryable writes run one at a time across servers,
// as mongod checks a session out for each (session_catalog.cpp).
func testManyServersConcurrentRetries(t *testing.T) {
	servers := startCluster(t, 3)
	createOnAll(t, servers, "r")
	conns := make([]*rawConn, len(servers))
	for i, ts := range servers {
		conns[i] = dialRaw(t, ts)
	}
	lsid := clusterLsid(4)
	const rounds = 30
	for n := int64(1); n <= rounds; n++ {
		cmd := retryCmd(lsid, n, bson.E{Key: "update", Value: "r"}, bson.E{Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}},
		}})
		replies := make([]bson.Raw, len(conns))
		done := make(chan int)
		for i, raw := range conns {
			go func() {
				defer func() { done <- i }()
				raw.send(raw.msgFrame(cmd))
			}()
		}
		for range conns {
			<-done
		}
		for i, raw := range conns {
			m := raw.receive()
			replies[i] = bson.Raw(m.Msg.Body)
			if lookup(t, replies[i], "ok").AsFloat64() != 1 || replies[i].Lookup("writeErrors").Type != 0 {
				t.Fatalf("round %d on server %d: %v", n, i, replies[i])
			}
		}
		for i := 1; i < len(replies); i++ {
			sameReply(t, fmt.Sprintf("round %d, server %d against server 0", n, i), replies[0], replies[i], "n", "nModified", "upserted")
		}
	}
	coll := servers[0].Client.Database("app").Collection("r")
	for _, id := range []int{1, 2} {
		var doc bson.M
		if err := coll.FindOne(testCtx(t), bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil || doc["n"] != int32(rounds) {
			t.Errorf("document %d: %v, %v; want n %d, one increment per round", id, doc, err, rounds)
		}
	}
}
