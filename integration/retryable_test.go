package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startRetryable starts a replica-set member with test commands and a
// client that connects to the set (retryWrites is the drivers' default).
func startRetryable(t *testing.T) (*testServer, *mongo.Client) {
	t.Helper()
	ts := startServer(t, withReplSet("rs0"), withTestCommands())
	return ts, ts.NewClient(t, options.Client().ApplyURI(ts.URI+"?replicaSet=rs0"))
}

// The driver retries a write whose connection closed before the reply,
// and one whose reply carries a retryable writeConcernError after the
// write ran: either way each statement takes effect once, because the
// retry finds the statements the first attempt executed.
func TestRetryableWritesDriver(t *testing.T) {
	ts, client := startRetryable(t)
	ctx := testCtx(t)
	coll := client.Database("app").Collection("c")
	failures := map[string]bson.D{
		"closeConnection": {{Key: "closeConnection", Value: true}},
		"writeConcernError": {{Key: "writeConcernError", Value: bson.D{{Key: "code", Value: 91},
			{Key: "errmsg", Value: "Replication is being shut down"}}}},
	}
	for name, failure := range failures {
		t.Run(name, func(t *testing.T) {
			if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
				t.Fatal(err)
			}
			fail := func(cmd string) {
				t.Helper()
				data := append(bson.D{{Key: "failCommands", Value: bson.A{cmd}}}, failure...)
				setFailPoint(t, ts, data, bson.D{{Key: "times", Value: 1}})
			}
			entered := func(what string) {
				t.Helper()
				if n := setFailPoint(t, ts, bson.D{}, "off"); n != 1 {
					t.Fatalf("%s: the fail point was entered %d times, want 1", what, n)
				}
			}
			fail("insert")
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
				t.Fatalf("the retried insert: %v", err)
			}
			entered("insert")
			if n := count(t, coll, bson.D{}); n != 1 {
				t.Fatalf("%d documents after the retried insert, want 1", n)
			}
			fail("update")
			res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
			if err != nil || res.ModifiedCount != 1 {
				t.Fatalf("the retried update: %+v, %v", res, err)
			}
			entered("update")
			fail("findAndModify")
			var got bson.M
			err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}},
				options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&got)
			if err != nil || got["n"] != int32(11) {
				t.Fatalf("the retried findAndModify: %v, %v; want n 11", got, err)
			}
			entered("findAndModify")
			var doc bson.M
			if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["n"] != int32(11) {
				t.Fatalf("after retries: %v, %v; want n 11 (each $inc once)", doc, err)
			}
			fail("insert")
			bw, err := coll.BulkWrite(ctx, []mongo.WriteModel{
				mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 2}}),
				mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 3}}),
			})
			if err != nil || bw.InsertedCount != 2 {
				t.Fatalf("the retried bulk write: %+v, %v", bw, err)
			}
			entered("bulk insert")
			fail("delete")
			dr, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}})
			if err != nil || dr.DeletedCount != 1 {
				t.Fatalf("the retried delete: %+v, %v; want 1 deleted", dr, err)
			}
			entered("delete")
			if n := count(t, coll, bson.D{}); n != 2 {
				t.Errorf("%d documents at the end, want 2", n)
			}
		})
	}
}

// retryCmd is a raw write command in session lsid with txnNumber txn.
func retryCmd(lsid bson.D, txn int64, cmd ...bson.E) bson.D {
	return append(bson.D(cmd), bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: txn}, bson.E{Key: "$db", Value: "app"})
}

// A command sent again with the same lsid and txnNumber answers what the
// first run did without writing again, also after a restart; statements
// not yet executed run; an older txnNumber is TransactionTooOld.
func TestRetryableWritesRaw(t *testing.T) {
	ts, _ := startRetryable(t)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("0123456789abcdef")}}}
	upsert := retryCmd(lsid, 5, bson.E{Key: "update", Value: "c"}, bson.E{Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: "a"}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}},
		bson.D{{Key: "q", Value: bson.D{{Key: "k", Value: "a"}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},
	}})
	check := func(reply bson.Raw, what string) bson.RawValue {
		t.Helper()
		if ok := lookup(t, reply, "ok").AsFloat64(); ok != 1 {
			t.Fatalf("%s: %v", what, reply)
		}
		if n, m := lookup(t, reply, "n").AsInt64(), lookup(t, reply, "nModified").AsInt64(); n != 2 || m != 1 {
			t.Fatalf("%s: n %d nModified %d, want 2 and 1: %v", what, n, m, reply)
		}
		return lookup(t, reply, "upserted", "0", "_id")
	}
	raw := dialRaw(t, ts)
	id := check(raw.command(upsert), "first run")
	if again := check(raw.command(upsert), "retry"); !again.Equal(id) {
		t.Errorf("retry upserted %v, the first run %v", again, id)
	}
	ins := retryCmd(lsid, 5, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "x"}}}})
	// A new txnNumber is a new write (with 5 the update's statement 0
	// would answer for it).
	ins[len(ins)-2].Value = int64(6)
	for i := 0; i < 2; i++ {
		reply := raw.command(ins)
		if lookup(t, reply, "n").AsInt64() != 1 || reply.Lookup("writeErrors").Type != 0 {
			t.Fatalf("insert run %d: %v", i, reply)
		}
	}
	ts.Restart(t)
	raw = dialRaw(t, ts)
	reply := raw.command(ins)
	if lookup(t, reply, "n").AsInt64() != 1 || reply.Lookup("writeErrors").Type != 0 {
		t.Fatalf("retried insert after a restart: %v", reply)
	}
	coll := ts.Client.Database("app").Collection("c")
	var doc bson.M
	if err := coll.FindOne(testCtx(t), bson.D{{Key: "k", Value: "a"}}).Decode(&doc); err != nil || doc["n"] != int32(2) {
		t.Fatalf("upserted document %v, %v; want n 2 (one upsert, one update)", doc, err)
	}
	// Adding a statement to the retried insert runs the new one only.
	ins2 := retryCmd(lsid, 6, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "x"}}, bson.D{{Key: "_id", Value: "y"}}}})
	if reply := raw.command(ins2); lookup(t, reply, "n").AsInt64() != 2 || reply.Lookup("writeErrors").Type != 0 {
		t.Fatalf("insert with one statement more: %v", reply)
	}
	if n := count(t, coll, bson.D{}); n != 3 {
		t.Errorf("%d documents, want 3", n)
	}
	old := raw.command(retryCmd(lsid, 5, bson.E{Key: "delete", Value: "c"}, bson.E{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}))
	if code := lookup(t, old, "code").AsInt64(); code != 225 {
		t.Errorf("older txnNumber: %v, want code 225", old)
	}
	// mongod's checks of a txnNumber, in its order.
	for _, c := range []struct {
		cmd  bson.D
		code int64
	}{
		{bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "app"}}, 72},
		{retryCmd(lsid, -1, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{}}}), 72},
		{bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int32(9)}, {Key: "$db", Value: "app"}}, 14},
	} {
		if reply := raw.command(c.cmd); lookup(t, reply, "ok").AsFloat64() != 0 || lookup(t, reply, "code").AsInt64() != c.code {
			t.Errorf("%v: %v, want code %d", c.cmd, reply, c.code)
		}
	}
	// The oplog entries of a retryable write name its session and statement.
	oplog := ts.Client.Database("local").Collection("oplog.rs")
	if n := count(t, oplog, bson.D{{Key: "txnNumber", Value: int64(6)}, {Key: "o._id", Value: "y"}, {Key: "stmtId", Value: int32(1)}, {Key: "lsid.id", Value: lsid[0].Value}}); n != 1 {
		t.Errorf("%d oplog entries of the insert of y as statement 1 of txnNumber 6, want 1", n)
	}
}

// A standalone server refuses transaction numbers, as mongod does.
func TestRetryableWritesStandalone(t *testing.T) {
	ts := startServer(t)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)}}}
	reply := dialRaw(t, ts).command(retryCmd(lsid, 1, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{}}}))
	if code := lookup(t, reply, "code").AsInt64(); code != 20 {
		t.Errorf("txnNumber on a standalone server: %v, want code 20", reply)
	}
}

// The Node.js driver and pymongo retry writes against Lethe as against a
// replica set: a closed connection and a retryable writeConcernError.
func TestRetryableWritesClients(t *testing.T) {
	ts, _ := startRetryable(t)
	uri := ts.URI + "test?replicaSet=rs0"
	t.Run("node", func(t *testing.T) { runNodeScript(t, "retryable.mjs", uri) })
	t.Run("pymongo", func(t *testing.T) { runPythonScript(t, "retryable.py", uri) })
}

// A session's records expire with it: once logicalSessionTimeoutMinutes
// pass without a use, a retry runs the statement again (here: a duplicate
// key), as after MongoDB reaps the session's transaction record.
func TestRetryableWritesExpire(t *testing.T) {
	ts, _ := startRetryable(t)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("expiring-session")}}}
	ins := retryCmd(lsid, 1, bson.E{Key: "insert", Value: "c"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}})
	raw := dialRaw(t, ts)
	for i := 0; i < 2; i++ {
		if reply := raw.command(ins); lookup(t, reply, "n").AsInt64() != 1 || reply.Lookup("writeErrors").Type != 0 {
			t.Fatalf("run %d within the timeout: %v", i, reply)
		}
	}
	ts.Clock.Advance(31 * time.Minute)
	reply := raw.command(ins)
	if n := lookup(t, reply, "n").AsInt64(); n != 0 || lookup(t, reply, "writeErrors", "0", "code").AsInt64() != 11000 {
		t.Fatalf("retry after the session timed out: %v, want the insert run again (duplicate key)", reply)
	}
}
