package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Multi-document transactions, as the Go driver runs them against a
// replica-set member. Codes and messages are mongod's: the session checks
// of src/mongo/db/transaction/transaction_participant.cpp (beginOrContinue),
// the command checks of transaction_validation.cpp and commands.cpp
// (canUseTransactions), the labels of error_labels.cpp
// (isTransientTransactionError), and the behaviour of jstests/core/txns
// (transaction_error_handling.js, transactions_write_errors.js,
// commands_not_allowed_in_txn.js).

const (
	codeNotInTransaction    = 263 // OperationNotSupportedInTransaction
	codeNoSuchTransaction   = 251
	codeTransactionCommited = 256 // TransactionCommitted
	codeWriteConflict       = 112
)

// hasLabel reports whether err is a server error with label.
func hasLabel(err error, label string) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorLabel(label)
}

// startTxnSession starts a session of client, ended with the test.
func startTxnSession(t *testing.T, client *mongo.Client) *mongo.Session {
	t.Helper()
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	return sess
}

// TestTransactionCommitAndAbortGo: a transaction's writes are seen by no
// other reader until it commits, then all at once; an aborted one leaves
// nothing; a transaction spans collections and databases; its reads see
// its snapshot and its own writes.
func TestTransactionCommitAndAbortGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	a := client.Database("test").Collection("txn_a")
	b := client.Database("test2").Collection("txn_b")
	mustInsert(t, a, bson.D{{Key: "_id", Value: 0}, {Key: "v", Value: 0}})
	mustInsert(t, b, bson.D{{Key: "_id", Value: 0}})

	sess := startTxnSession(t, client)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	for i := 1; i <= 3; i++ {
		if _, err := a.InsertOne(sctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if _, err := b.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateOne(sctx, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	// The transaction reads its own writes...
	if n, err := a.CountDocuments(sctx, bson.D{}); err != nil || n != 4 {
		t.Fatalf("count in the transaction: %d, %v", n, err)
	}
	// ...and nobody else does: not one of them, in either database.
	wantIDs(t, a, bson.D{}, 0)
	wantIDs(t, b, bson.D{}, 0)
	if n := count(t, a, bson.D{{Key: "v", Value: 1}}); n != 0 {
		t.Fatalf("the transaction's update is visible before its commit")
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	wantIDs(t, a, bson.D{}, 0, 1, 2, 3)
	wantIDs(t, b, bson.D{}, 0, 1)
	if n := count(t, a, bson.D{{Key: "v", Value: 1}}); n != 1 {
		t.Fatalf("the committed update is not visible")
	}

	// An aborted transaction leaves nothing, its update, delete and
	// inserts alike.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.InsertOne(sctx, bson.D{{Key: "_id", Value: 10}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateOne(sctx, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatalf("abort: %v", err)
	}
	wantIDs(t, a, bson.D{}, 0, 1, 2, 3)
	if n := count(t, b, bson.D{{Key: "x", Value: 1}}); n != 0 {
		t.Fatalf("the aborted update is visible")
	}

	// WithTransaction commits what its callback did.
	_, err := sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		if _, err := a.InsertOne(sctx, bson.D{{Key: "_id", Value: 20}}); err != nil {
			return nil, err
		}
		return b.InsertOne(sctx, bson.D{{Key: "_id", Value: 20}})
	})
	if err != nil {
		t.Fatalf("WithTransaction: %v", err)
	}
	wantIDs(t, a, bson.D{{Key: "_id", Value: 20}}, 20)
	wantIDs(t, b, bson.D{{Key: "_id", Value: 20}}, 20)
}

// TestTransactionSnapshotGo: a transaction reads one snapshot: a document
// committed by another client after its first read is not seen, however
// often it reads, and another transaction's reads never see part of a
// transaction.
func TestTransactionSnapshotGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	coll := client.Database("test").Collection("txn_snap")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})

	sess := startTxnSession(t, client)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if n, err := coll.CountDocuments(sctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("first read: %d, %v", n, err)
	}
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 2}})
	for i := 0; i < 2; i++ {
		if n, err := coll.CountDocuments(sctx, bson.D{}); err != nil || n != 1 {
			t.Fatalf("read %d in the transaction: %d, %v (want the snapshot's 1)", i, n, err)
		}
	}
	if err := sess.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}

	// A reader polling while transactions move a unit between two
	// documents always sees the total.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: "x"}, {Key: "n", Value: 50}}, bson.D{{Key: "_id", Value: "y"}, {Key: "n", Value: 50}})
	reader := startTxnSession(t, client)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 20; i++ {
			_, err := sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
				if _, err := coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: "x"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: -1}}}}); err != nil {
					return nil, err
				}
				return coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: "y"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
			})
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			return
		default:
		}
		// The reader reads in a transaction of its own: its one snapshot
		// holds all of each transfer or none. (A plain find reads each
		// document on the latest state, engine/scan.go, so it is no
		// witness of atomicity.)
		var docs []struct{ N int32 }
		_, err := reader.WithTransaction(ctx, func(sctx context.Context) (any, error) {
			cur, err := coll.Find(sctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"x", "y"}}}}})
			if err != nil {
				return nil, err
			}
			return nil, cur.All(sctx, &docs)
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 2 || docs[0].N+docs[1].N != 100 {
			t.Fatalf("a reader saw part of a transaction: %+v", docs)
		}
	}
}

// TestTransactionWriteConflictGo: two transactions writing one document:
// the second writer gets WriteConflict with TransientTransactionError and
// no RetryableWriteError, its transaction is aborted, and WithTransaction
// runs the callback again once the first commits, then succeeds.
func TestTransactionWriteConflictGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	coll := client.Database("test").Collection("txn_wc")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}})
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}

	s1, s2 := startTxnSession(t, client), startTxnSession(t, client)
	if err := s1.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx1 := mongo.NewSessionContext(ctx, s1)
	if _, err := coll.UpdateOne(ctx1, bson.D{{Key: "_id", Value: 1}}, inc); err != nil {
		t.Fatal(err)
	}
	if err := s2.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx2 := mongo.NewSessionContext(ctx, s2)
	_, err := coll.UpdateOne(ctx2, bson.D{{Key: "_id", Value: 1}}, inc)
	wantCode(t, err, codeWriteConflict)
	if !hasLabel(err, "TransientTransactionError") || hasLabel(err, "RetryableWriteError") {
		t.Fatalf("WriteConflict labels: %v", err)
	}
	// The failed statement aborted the second transaction.
	err = s2.CommitTransaction(ctx)
	wantCode(t, err, codeNoSuchTransaction)

	// WithTransaction meets the conflict while s1 is open, and retries
	// until s1 has committed.
	calls := 0
	committed := make(chan struct{})
	_, err = s2.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		calls++
		if calls == 2 {
			if err := s1.CommitTransaction(ctx); err != nil {
				t.Errorf("commit s1: %v", err)
			}
			close(committed)
		}
		return coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: 1}}, inc)
	})
	if err != nil {
		t.Fatalf("WithTransaction: %v", err)
	}
	<-committed
	if calls < 2 {
		t.Fatalf("the callback ran %d times: the conflict was not retried", calls)
	}
	var doc struct{ N int32 }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc.N != 2 {
		t.Fatalf("n = %d, %v; want 2", doc.N, err)
	}
}

// TestTransactionUniqueConflictGo: two transactions inserting the same
// unique key: the second conflicts (WriteConflict, as mongod answers a
// key another open transaction holds); after the first commits, a new
// attempt meets the committed key: DuplicateKey, not transient, which
// aborts its transaction.
func TestTransactionUniqueConflictGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	coll := client.Database("test").Collection("txn_unique")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	s1, s2 := startTxnSession(t, client), startTxnSession(t, client)
	ctx1, ctx2 := mongo.NewSessionContext(ctx, s1), mongo.NewSessionContext(ctx, s2)
	if err := s1.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx1, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err := coll.InsertOne(ctx2, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "a"}})
	wantCode(t, err, codeWriteConflict)
	if !hasLabel(err, "TransientTransactionError") {
		t.Fatalf("no TransientTransactionError: %v", err)
	}
	_ = s2.AbortTransaction(ctx)
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx2, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "a"}})
	wantCode(t, err, 11000)
	if hasLabel(err, "TransientTransactionError") {
		t.Fatalf("DuplicateKey is labelled transient: %v", err)
	}
	wantCode(t, s2.CommitTransaction(ctx), codeNoSuchTransaction)
	wantIDs(t, coll, bson.D{}, 1)
}

// txnCmd is a command of transaction number n, sent raw in a session's
// context (which adds its lsid) so that the test chooses its fields. The
// numbers start past those the driver used on the session's pooled
// server session for retryable writes, which are older.
func txnCmd(cmd bson.D, n int64, start bool) bson.D {
	cmd = append(cmd[:len(cmd):len(cmd)], bson.E{Key: "txnNumber", Value: 1000 + n}, bson.E{Key: "autocommit", Value: false})
	if start {
		cmd = append(cmd, bson.E{Key: "startTransaction", Value: true})
	}
	return cmd
}

// TestTransactionCommandsGo: commitTransaction retried after a commit
// answers ok again; abort after commit is
// TransactionCommitted; commit after abort and any statement of an
// unknown transaction NoSuchTransaction with TransientTransactionError;
// an older number TransactionTooOld; a started number again
// ConflictingOperationInProgress; the session fields are checked as
// mongod checks them.
func TestTransactionCommandsGo(t *testing.T) {
	_, client := startReplSet(t)
	db, admin := client.Database("test"), client.Database("admin")
	sess := startTxnSession(t, client)
	ctx := mongo.NewSessionContext(testCtx(t), sess)
	runIn := func(db *mongo.Database, cmd bson.D) error { return db.RunCommand(ctx, cmd).Err() }
	insert := func(id int) bson.D {
		return bson.D{{Key: "insert", Value: "txn_cmds"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}}}
	}
	commit := bson.D{{Key: "commitTransaction", Value: 1}}
	abort := bson.D{{Key: "abortTransaction", Value: 1}}

	if err := runIn(db, txnCmd(insert(1), 5, true)); err != nil {
		t.Fatal(err)
	}
	if err := runIn(admin, txnCmd(commit, 5, false)); err != nil {
		t.Fatal(err)
	}
	if err := runIn(admin, txnCmd(commit, 5, false)); err != nil {
		t.Fatalf("commit retried: %v", err)
	}
	wantCode(t, runIn(admin, txnCmd(abort, 5, false)), codeTransactionCommited)
	wantCode(t, runIn(db, txnCmd(insert(2), 5, false)), codeTransactionCommited)
	wantCode(t, runIn(db, txnCmd(insert(2), 5, true)), 117) // ConflictingOperationInProgress
	wantCode(t, runIn(db, txnCmd(insert(2), 4, true)), 225) // TransactionTooOld

	err := runIn(db, txnCmd(insert(2), 9, false))
	wantCode(t, err, codeNoSuchTransaction)
	if !hasLabel(err, "TransientTransactionError") {
		t.Fatalf("NoSuchTransaction without TransientTransactionError: %v", err)
	}
	wantCode(t, runIn(admin, txnCmd(abort, 9, false)), codeNoSuchTransaction)

	// Abort, then commit: NoSuchTransaction.
	if err := runIn(db, txnCmd(insert(3), 10, true)); err != nil {
		t.Fatal(err)
	}
	if err := runIn(admin, txnCmd(abort, 10, false)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, runIn(admin, txnCmd(commit, 10, false)), codeNoSuchTransaction)
	wantCode(t, runIn(admin, txnCmd(abort, 10, false)), codeNoSuchTransaction)
	wantIDs(t, db.Collection("txn_cmds"), bson.D{}, 1)

	// A new number aborts the open transaction.
	if err := runIn(db, txnCmd(insert(4), 11, true)); err != nil {
		t.Fatal(err)
	}
	if err := runIn(db, txnCmd(insert(5), 12, true)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, runIn(admin, txnCmd(commit, 11, false)), 225)
	if err := runIn(admin, txnCmd(commit, 12, false)); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, db.Collection("txn_cmds"), bson.D{}, 1, 5)

	// Outside a transaction the commands fail, and only run on admin.
	wantCode(t, runIn(admin, commit), 125) // CommandFailed
	wantCode(t, runIn(db, commit), 13)     // Unauthorized: admin only
	wantCode(t, runIn(admin, abort), 125)

	// The session fields.
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int
	}{
		{"autocommit without txnNumber", bson.D{{Key: "find", Value: "c"}, {Key: "autocommit", Value: false}}, 72},
		{"autocommit true", bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: true}}, 72},
		{"startTransaction without autocommit", bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}, {Key: "startTransaction", Value: true}}, 72},
		{"startTransaction false", bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: false}, {Key: "startTransaction", Value: false}}, 72},
		{"autocommit not a bool", bson.D{{Key: "find", Value: "c"}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: 0}}, 14},
		{"readConcern after the first statement", txnCmd(bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "local"}}}}, 12, false), 72},
		{"readConcern available", txnCmd(bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "available"}}}}, 20, true), 72},
		{"writeConcern on a statement", txnCmd(append(insert(9), bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}), 20, true), 72},
		{"start with a commit", txnCmd(commit, 20, true), codeNotInTransaction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := db
			if tc.cmd[0].Key == "commitTransaction" {
				target = admin
			}
			wantCode(t, target.RunCommand(ctx, tc.cmd).Err(), tc.code)
		})
	}
}

// TestTransactionRefusedCommandsGo: commands a transaction may not run are
// refused with OperationNotSupportedInTransaction, count, an index on an
// existing collection and the stages that write or watch included; the
// transaction they would have started never starts.
func TestTransactionRefusedCommandsGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("test")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	sess := startTxnSession(t, client)
	sctx := mongo.NewSessionContext(ctx, sess)
	n := int64(0)
	for _, cmd := range []bson.D{
		{{Key: "count", Value: "c"}},
		{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}},
		{{Key: "drop", Value: "c"}},
		{{Key: "listCollections", Value: 1}},
		{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}}}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "o"}}}}, {Key: "cursor", Value: bson.D{}}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$merge", Value: "o"}}}}, {Key: "cursor", Value: bson.D{}}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$collStats", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}},
	} {
		n++
		err := db.RunCommand(sctx, txnCmd(cmd, n, true)).Err()
		wantCode(t, err, codeNotInTransaction)
		err = client.Database("admin").RunCommand(sctx, txnCmd(bson.D{{Key: "abortTransaction", Value: 1}}, n, false)).Err()
		wantCode(t, err, codeNoSuchTransaction)
	}
	// The driver's own path: a count in a transaction.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	err := db.RunCommand(sctx, bson.D{{Key: "count", Value: "c"}}).Err()
	wantCode(t, err, codeNotInTransaction)
	_ = sess.AbortTransaction(ctx)
	wantIDs(t, db.Collection("c"), bson.D{}, 1)
	if names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "o"}}); err != nil || len(names) != 0 {
		t.Fatalf("a refused $out wrote: %v, %v", names, err)
	}
}

// TestTransactionStandaloneGo: a standalone server refuses a transaction
// number, as mongod does: IllegalOperation (20).
func TestTransactionStandaloneGo(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	sess := startTxnSession(t, ts.Client)
	coll := ts.Client.Database("test").Collection("txn_standalone")
	_, err := sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		return coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}})
	})
	wantCode(t, err, 20)
	wantIDs(t, coll, bson.D{})
}

// TestTransactionLifetimeGo: a transaction open longer than
// transactionLifetimeLimitSeconds is aborted by the server: serverStatus
// counts it, and its commit finds NoSuchTransaction.
func TestTransactionLifetimeGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	admin := client.Database("admin")
	run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}})
	t.Cleanup(func() {
		admin.RunCommand(context.Background(), bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 60}})
	})
	if got := lookup(t, run(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}}), "transactionLifetimeLimitSeconds"); got.AsInt64() != 1 {
		t.Fatalf("getParameter: %v", got)
	}
	coll := client.Database("test").Collection("txn_lifetime")
	sess := startTxnSession(t, client)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	txns := func() bson.Raw {
		return lookup(t, run(t, admin, bson.D{{Key: "serverStatus", Value: 1}}), "transactions").Document()
	}
	if st := txns(); st.Lookup("currentOpen").AsInt64() != 1 || st.Lookup("currentInactive").AsInt64() != 1 || st.Lookup("totalStarted").AsInt64() != 1 {
		t.Fatalf("serverStatus transactions: %v", st)
	}
	// currentOp shows the open transaction waiting for its next statement.
	inprog, err := lookup(t, run(t, admin, bson.D{{Key: "currentOp", Value: 1}}), "inprog").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range inprog {
		d := v.Document()
		if d.Lookup("type").StringValue() == "idleSession" {
			found = d.Lookup("transaction", "parameters", "autocommit").Type == bson.TypeBoolean &&
				d.Lookup("transaction", "timeOpenMicros").Type == bson.TypeInt64
		}
	}
	if !found {
		t.Fatalf("currentOp lists no idle transaction: %v", inprog)
	}
	deadline := time.Now().Add(15 * time.Second)
	for txns().Lookup("currentOpen").AsInt64() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the transaction outlived its lifetime: %v", txns())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ab := txns().Lookup("totalAborted").AsInt64(); ab != 1 {
		t.Fatalf("totalAborted %d, want 1", ab)
	}
	err = sess.CommitTransaction(ctx)
	wantCode(t, err, codeNoSuchTransaction)
	wantIDs(t, coll, bson.D{})
}

// TestTransactionCursorGo: a cursor opened in a transaction reads its
// snapshot batch after batch, can be read only in it, and is closed when
// it ends.
func TestTransactionCursorGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("test")
	coll := db.Collection("txn_cursor")
	for i := 0; i < 10; i++ {
		mustInsert(t, coll, bson.D{{Key: "_id", Value: i}})
	}
	sess := startTxnSession(t, client)
	ctx = mongo.NewSessionContext(ctx, sess)
	find := bson.D{{Key: "find", Value: "txn_cursor"}, {Key: "batchSize", Value: 2}}
	raw, err := db.RunCommand(ctx, txnCmd(find, 1, true)).Raw()
	if err != nil {
		t.Fatal(err)
	}
	id := raw.Lookup("cursor", "id").Int64()
	if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: 100}}); err != nil {
		t.Fatal(err)
	}
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "txn_cursor"}, {Key: "batchSize", Value: 100}}
	// Outside the transaction: refused (getmore_cmd.cpp, 50740).
	err = db.RunCommand(ctx, getMore).Err()
	wantCode(t, err, 50740)
	raw, err = db.RunCommand(ctx, txnCmd(getMore, 1, false)).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if docs, _ := raw.Lookup("cursor", "nextBatch").Array().Values(); len(docs) != 8 {
		t.Fatalf("getMore read %d documents, want the snapshot's other 8", len(docs))
	}

	// A cursor left open when the transaction ends is closed.
	raw, err = db.RunCommand(ctx, txnCmd(find, 2, true)).Raw()
	if err != nil {
		t.Fatal(err)
	}
	id = raw.Lookup("cursor", "id").Int64()
	if err := client.Database("admin").RunCommand(ctx, txnCmd(bson.D{{Key: "commitTransaction", Value: 1}}, 2, false)).Err(); err != nil {
		t.Fatal(err)
	}
	getMore[0].Value = id
	wantCode(t, db.RunCommand(ctx, getMore).Err(), 43) // CursorNotFound
}

// TestTransactionRefusedNode: the Node.js driver's withTransaction commits,
// and its abortTransaction leaves nothing.
func TestTransactionNode(t *testing.T) {
	ts, _ := startReplSet(t)
	runNodeScript(t, "txn.mjs", ts.URI+"test?replicaSet=rs0")
}

// TestTransactionDDLGo: a transaction creates a collection and an index on
// it (MongoDB 4.4+, jstests/core/txns/create_collection.js and
// create_indexes.js); the index covers the documents the transaction
// wrote before it; an abort takes the collection away again.
func TestTransactionDDLGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("ddl")
	sess := startTxnSession(t, client)
	_, err := sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		if err := db.CreateCollection(sctx, "made"); err != nil {
			return nil, err
		}
		coll := db.Collection("made")
		if _, err := coll.InsertMany(sctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "b"}}}); err != nil {
			return nil, err
		}
		_, err := coll.Indexes().CreateOne(sctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)})
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("made")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "a"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("the unique index built in the transaction lets a duplicate of its own document in: %v", err)
	}
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 2 {
		t.Fatalf("indexes after the commit: %v, %v", specs, err)
	}

	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if err := db.CreateCollection(sctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("gone").InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "gone"}}); err != nil || len(names) != 0 {
		t.Fatalf("the collection of an aborted transaction: %v, %v", names, err)
	}
}

// TestTransactionAtClusterTimeGo: a transaction's first statement may
// name readConcern {level: "snapshot", atClusterTime}
// (jstests/replsets/read_at_cluster_time_outside_transactions.js and the
// transaction tests of atClusterTime): the latest cluster time is read
// at; a time after the cluster time is InvalidOptions, as in mongod. An
// earlier time with commits after it is SnapshotTooOld here: Lethe keeps
// no versions on pebble (docs/compatibility.md).
func TestTransactionAtClusterTimeGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("atc")
	var res bson.Raw
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	tt, ti, ok := res.Lookup("operationTime").TimestampOK()
	if !ok {
		t.Fatalf("no operationTime: %v", res)
	}
	at := bson.Timestamp{T: tt, I: ti}
	sess := startTxnSession(t, client)
	sctx := mongo.NewSessionContext(ctx, sess)
	rc := func(ts bson.Timestamp) bson.E {
		return bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: ts}}}
	}
	find := bson.D{{Key: "find", Value: "c"}}
	if err := db.RunCommand(sctx, txnCmd(append(find, rc(at)), 1, true)).Decode(&res); err != nil {
		t.Fatalf("a transaction at the latest cluster time: %v", err)
	}
	if err := client.Database("admin").RunCommand(sctx, txnCmd(bson.D{{Key: "commitTransaction", Value: 1}}, 1, false)).Err(); err != nil {
		t.Fatal(err)
	}
	err := db.RunCommand(sctx, txnCmd(append(find, rc(bson.Timestamp{T: tt + 1000, I: 1})), 2, true)).Err()
	wantCode(t, err, 72)
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	err = db.RunCommand(sctx, txnCmd(append(find, rc(at)), 3, true)).Err()
	wantCode(t, err, 239)
}
