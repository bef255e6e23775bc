package integration

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
)

func withTestCommands() serverOption {
	return func(c *server.Config) { c.EnableTestCommands = true }
}

// setFailPoint configures failCommand with data in mode and returns the
// reply's count.
func setFailPoint(t *testing.T, ts *testServer, data bson.D, mode any) int64 {
	t.Helper()
	reply := run(t, ts.Client.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"},
		{Key: "mode", Value: mode}, {Key: "data", Value: data}})
	return lookup(t, reply, "count").AsInt64()
}

// Without --enable-test-commands configureFailPoint does not exist, as in
// mongod without enableTestCommands.
func TestFailPointNeedsTestCommands(t *testing.T) {
	ts := startServer(t)
	err := ts.Client.Database("admin").RunCommand(testCtx(t), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}}).Err()
	wantCode(t, err, 59)
}

// configureFailPoint checks its arguments as MongoDB does.
func TestFailPointArguments(t *testing.T) {
	ts := startServer(t, withTestCommands())
	ctx := testCtx(t)
	admin := ts.Client.Database("admin")
	for _, c := range []struct {
		cmd  bson.D
		code int
	}{
		{bson.D{{Key: "configureFailPoint", Value: "noSuchFailPoint"}, {Key: "mode", Value: "off"}}, 237},
		{bson.D{{Key: "configureFailPoint", Value: "failCommand"}}, 20},
		{bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "sometimes"}}, 2},
		{bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: 1}}, 14},
		{bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: -1}}}}, 2},
		{bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "often", Value: 1}}}}, 2},
		{bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "alwaysOn"}, {Key: "data", Value: 1}}, 14},
	} {
		err := admin.RunCommand(ctx, c.cmd).Err()
		if got := errCode(err); got != c.code {
			t.Errorf("%v: %v (code %d), want code %d", c.cmd, err, got, c.code)
		}
	}
	err := ts.Client.Database("app").RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}}).Err()
	wantCode(t, err, 13)
}

// errorCode fails the named commands with the code and the labels given;
// {times: n} fails n of them and {skip: n} lets n pass first. The count
// configureFailPoint returns is the activations of the previous setting.
func TestFailPointErrorCode(t *testing.T) {
	ts := startServer(t, withTestCommands())
	ctx := testCtx(t)
	coll := ts.Client.Database("app").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"find", "aggregate"}}, {Key: "errorCode", Value: 2},
		{Key: "errorLabels", Value: bson.A{"MyLabel"}}}, bson.D{{Key: "times", Value: 2}})
	err := coll.FindOne(ctx, bson.D{}).Err()
	wantCode(t, err, 2)
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorLabel("MyLabel") {
		t.Errorf("labels of %v: want MyLabel", err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatalf("insert is not among failCommands: %v", err)
	}
	_, err = coll.CountDocuments(ctx, bson.D{})
	wantCode(t, err, 2)
	if err := coll.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("after two failures: %v", err)
	}
	if n := setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "errorCode", Value: 11000}},
		bson.D{{Key: "skip", Value: 1}}); n != 2 {
		t.Errorf("count %d, want 2", n)
	}
	if err := coll.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("the skipped find: %v", err)
	}
	wantCode(t, coll.FindOne(ctx, bson.D{}).Err(), 11000)
	wantCode(t, coll.FindOne(ctx, bson.D{}).Err(), 11000)
	setFailPoint(t, ts, bson.D{}, "off")
	if err := coll.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("after off: %v", err)
	}
}

// closeConnection closes the connection without a reply. The driver
// retries a read on a new connection (retryReads), so the find succeeds.
// A write it retries only on a replica set (the retryable writes
// specification leaves standalone servers out): there the retry writes the
// document once, since the first attempt never ran; on a standalone server
// the insert fails with a network error and writes nothing.
func TestFailPointCloseConnection(t *testing.T) {
	t.Run("standalone", func(t *testing.T) { testFailPointCloseConnection(t, startServer(t, withTestCommands())) })
	t.Run("replicaSet", func(t *testing.T) {
		testFailPointCloseConnection(t, startServer(t, withTestCommands(), withReplSet("rs0")))
	})
}

func testFailPointCloseConnection(t *testing.T, ts *testServer) {
	ctx := testCtx(t)
	coll := ts.Client.Database("app").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})

	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "closeConnection", Value: true}},
		bson.D{{Key: "times", Value: 1}})
	if err := coll.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("the retried find: %v", err)
	}
	if n := setFailPoint(t, ts, bson.D{}, "off"); n != 1 {
		t.Fatalf("the fail point was entered %d times, want 1", n)
	}

	hello := run(t, ts.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
	_, replicaSet := hello.Lookup("setName").StringValueOK()
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "closeConnection", Value: true}},
		bson.D{{Key: "times", Value: 1}})
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
	switch {
	case replicaSet && err != nil:
		t.Fatalf("the retried insert: %v", err)
	case !replicaSet && !mongo.IsNetworkError(err):
		t.Fatalf("insert on a standalone server: %v, want a network error", err)
	}
	want := int64(0)
	if replicaSet {
		want = 1
	}
	if n := count(t, coll, bson.D{{Key: "_id", Value: 2}}); n != want {
		t.Errorf("%d documents written, want %d", n, want)
	}
	raw := dialRaw(t, ts)
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "closeConnection", Value: true}}, "alwaysOn")
	raw.send(raw.msgFrame(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}))
	raw.expectClosed()
}

// blockConnection delays the command by blockTimeMS, then runs it (or
// fails it with errorCode); maxTimeMS cuts the wait short, and appName
// limits the fail point to one application's connections.
func TestFailPointBlockConnection(t *testing.T) {
	ts := startServer(t, withTestCommands())
	ctx := testCtx(t)
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "blockConnection", Value: true},
		{Key: "blockTimeMS", Value: 300}, {Key: "appName", Value: "slow"}}, "alwaysOn")
	slow := ts.NewClient(t, options.Client().SetAppName("slow")).Database("admin")
	start := time.Now()
	if err := slow.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("the blocked ping took %v, want 300 ms or more", d)
	}
	err := slow.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "maxTimeMS", Value: 50}}).Err()
	wantCode(t, err, 50)
	// Another application is not blocked: a raw connection has no appName.
	raw := dialRaw(t, ts)
	start = time.Now()
	reply := raw.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	if ok := lookup(t, reply, "ok").AsFloat64(); ok != 1 || time.Since(start) >= 300*time.Millisecond {
		t.Errorf("unfiltered ping: %v after %v", reply, time.Since(start))
	}
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "blockConnection", Value: true},
		{Key: "blockTimeMS", Value: 100}, {Key: "errorCode", Value: 2}}, bson.D{{Key: "times", Value: 1}})
	start = time.Now()
	// BadValue rather than a state-change code such as ShutdownInProgress:
	// a driver marks the server unknown on those, and with the streaming
	// hello its monitor learns otherwise only when its wait ends, as with
	// a real mongod.
	wantCode(t, slow.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(), 2)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("the blocked failure took %v", d)
	}
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "blockConnection", Value: true}}, "alwaysOn")
	wantCode(t, slow.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(), 72)
}

// A write command that carries a txnNumber (a retryable write) and fails
// with a retryable code gets the RetryableWriteError label, as MongoDB
// gives it; without a txnNumber, or with labels the fail point sets, it
// does not. writeConcernError is added to the reply of a command that ran.
func TestFailPointErrorLabels(t *testing.T) {
	// Only a replica-set member takes transaction numbers.
	ts := startServer(t, withReplSet("rs0"), withTestCommands())
	raw := dialRaw(t, ts)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: make([]byte, 16)}}}
	insert := func(id int32, txn bool) bson.Raw {
		cmd := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
			{Key: "lsid", Value: lsid}, {Key: "$db", Value: "app"}}
		if txn {
			cmd = append(cmd, bson.E{Key: "txnNumber", Value: int64(id)})
		}
		return raw.command(cmd)
	}
	labels := func(reply bson.Raw) []string {
		var out []string
		if arr, ok := reply.Lookup("errorLabels").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				out = append(out, v.StringValue())
			}
		}
		return out
	}
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: 91}}, "alwaysOn")
	reply := insert(1, true)
	if code := lookup(t, reply, "code").Int32(); code != 91 {
		t.Fatalf("reply %v", reply)
	}
	if l := labels(reply); len(l) != 1 || l[0] != "RetryableWriteError" {
		t.Errorf("retryable write: labels %v, want [RetryableWriteError]", l)
	}
	if l := labels(insert(2, false)); l != nil {
		t.Errorf("without txnNumber: labels %v, want none", l)
	}
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: 2}}, "alwaysOn")
	if l := labels(insert(3, true)); l != nil {
		t.Errorf("code 2: labels %v, want none", l)
	}
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: 91},
		{Key: "errorLabels", Value: bson.A{}}}, "alwaysOn")
	if l := labels(insert(4, true)); l != nil {
		t.Errorf("errorLabels []: labels %v, want none", l)
	}
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"insert"}},
		{Key: "writeConcernError", Value: bson.D{{Key: "code", Value: 91}, {Key: "errmsg", Value: "Replication is being shut down"}}}}, "alwaysOn")
	reply = insert(5, true)
	if ok := lookup(t, reply, "ok").AsFloat64(); ok != 1 || lookup(t, reply, "n").AsInt64() != 1 {
		t.Fatalf("insert with writeConcernError: %v", reply)
	}
	if code := lookup(t, reply, "writeConcernError", "code").AsInt64(); code != 91 {
		t.Errorf("writeConcernError %v", reply)
	}
	if l := labels(reply); len(l) != 1 || l[0] != "RetryableWriteError" {
		t.Errorf("writeConcernError: labels %v, want [RetryableWriteError]", l)
	}
	setFailPoint(t, ts, bson.D{}, "off")
	if n := count(t, ts.Client.Database("app").Collection("c"), bson.D{}); n != 1 {
		t.Errorf("%d documents, want only the one written under writeConcernError", n)
	}
}
