package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Until Lethe has multi-document transactions, a transaction's statements
// are refused and nothing they would write is written. The checks of
// autocommit and startTransaction, their codes and messages, are mongod's
// (src/mongo/db/initialize_operation_session_info.cpp); commitTransaction
// and abortTransaction outside a transaction answer CommandFailed, and only
// on admin (src/mongo/db/commands/txn_cmds.cpp).

// codeNotInTransaction is OperationNotSupportedInTransaction.
const codeNotInTransaction = 263

// TestTransactionRefusedGo: the Go driver's transaction API gets an error
// for the first statement, its abort leaves nothing behind, and
// WithTransaction gives up at once: the refusal carries no
// TransientTransactionError label for it to retry on.
func TestTransactionRefusedGo(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	coll := client.Database("test").Collection("txn_go")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}

	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	sctx := mongo.NewSessionContext(ctx, sess)

	// startTransaction, insert, abortTransaction.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}})
	wantCode(t, err, codeNotInTransaction)
	var se mongo.ServerError
	if errors.As(err, &se) && se.HasErrorLabel("TransientTransactionError") {
		t.Errorf("the refusal is labelled TransientTransactionError: %v", err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatalf("abortTransaction: %v", err)
	}
	wantIDs(t, coll, bson.D{}, 0)

	// An update and a delete in a transaction change nothing either.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	wantCode(t, err, codeNotInTransaction)
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatalf("abortTransaction: %v", err)
	}
	if n := count(t, coll, bson.D{{Key: "x", Value: 1}}); n != 0 {
		t.Errorf("the update of an aborted transaction is visible")
	}
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = coll.DeleteOne(sctx, bson.D{{Key: "_id", Value: 0}})
	wantCode(t, err, codeNotInTransaction)
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatalf("abortTransaction: %v", err)
	}
	wantIDs(t, coll, bson.D{}, 0)

	// A commit after a refused statement fails: nothing was committed.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 3}})
	wantCode(t, err, codeNotInTransaction)
	wantCode(t, sess.CommitTransaction(ctx), codeNotInTransaction)
	wantIDs(t, coll, bson.D{}, 0)

	// A read in a transaction is refused too: it would read outside one.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	err = coll.FindOne(sctx, bson.D{}).Err()
	wantCode(t, err, codeNotInTransaction)
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatalf("abortTransaction: %v", err)
	}

	// WithTransaction retries a TransientTransactionError for 120 s; this
	// one must come back at the first attempt.
	calls := 0
	start := time.Now()
	_, err = sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		calls++
		return coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}})
	})
	wantCode(t, err, codeNotInTransaction)
	if calls != 1 || time.Since(start) > 10*time.Second {
		t.Errorf("WithTransaction ran its callback %d times in %v, want once", calls, time.Since(start))
	}
	wantIDs(t, coll, bson.D{}, 0)
}

// TestTransactionCommands: commitTransaction and abortTransaction are
// commands (not CommandNotFound, which drivers ignore on abort); in a
// transaction they are refused as its statements are, outside one they
// fail with CommandFailed, and they run only on admin. The session fields
// are checked as mongod checks them.
func TestTransactionCommands(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	admin := client.Database("admin")
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	sctx := mongo.NewSessionContext(ctx, sess)

	for _, name := range []string{"commitTransaction", "abortTransaction"} {
		err := admin.RunCommand(sctx, bson.D{{Key: name, Value: 1}, {Key: "txnNumber", Value: int64(7)}, {Key: "autocommit", Value: false}}).Err()
		wantCode(t, err, codeNotInTransaction)
		err = admin.RunCommand(sctx, bson.D{{Key: name, Value: 1}}).Err()
		wantCode(t, err, 125) // CommandFailed
		err = client.Database("test").RunCommand(sctx, bson.D{{Key: name, Value: 1}}).Err()
		wantCode(t, err, 13) // Unauthorized: admin only
	}

	db := client.Database("test")
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
		{"insert starting a transaction", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: false}, {Key: "startTransaction", Value: true}}, codeNotInTransaction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, db.RunCommand(sctx, tc.cmd).Err(), tc.code)
		})
	}
	if n := count(t, db.Collection("c"), bson.D{}); n != 0 {
		t.Errorf("a refused transaction statement wrote %d documents", n)
	}
}

// TestTransactionRefusedNode: the Node.js driver's withTransaction and its
// startTransaction/abortTransaction see the refusal and leave nothing.
func TestTransactionRefusedNode(t *testing.T) {
	ts, _ := startReplSet(t)
	runNodeScript(t, "txn.mjs", ts.URI+"test?replicaSet=rs0")
}
