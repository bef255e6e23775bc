package integration

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/lethedb/lethe/server"
	"github.com/lethedb/lethe/wire"
)

func withReplSet(name string) serverOption {
	return func(c *server.Config) { c.ReplSet = name }
}

// startReplSet starts a server in replica-set mode; its URI names the set.
func startReplSet(t *testing.T) (*testServer, *mongo.Client) {
	t.Helper()
	ts := startServer(t, withReplSet("rs0"))
	client := ts.NewClient(t, options.Client().ApplyURI(ts.URI+"?replicaSet=rs0"))
	return ts, client
}

// TestReplSetHello: a one-member set's primary describes itself as MongoDB's
// does, to drivers connecting with and without replicaSet in the URI.
func TestReplSetHello(t *testing.T) {
	ts, rsClient := startReplSet(t)
	addr := ts.Srv.Addr().String()
	for name, client := range map[string]*mongo.Client{"replicaSet": rsClient, "direct": ts.Client} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			coll := client.Database("test").Collection("c_" + name)
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
				t.Fatalf("insert: %v", err)
			}
			if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
				t.Fatalf("count: %d, %v", n, err)
			}
			hello := run(t, client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
			if got := lookup(t, hello, "setName").StringValue(); got != "rs0" {
				t.Errorf("setName %q", got)
			}
			hosts := lookup(t, hello, "hosts").Array()
			if vals, _ := hosts.Values(); len(vals) != 1 || vals[0].StringValue() != addr {
				t.Errorf("hosts %v, want [%s]", hosts, addr)
			}
			for _, f := range []string{"primary", "me"} {
				if got := lookup(t, hello, f).StringValue(); got != addr {
					t.Errorf("%s %q, want %q", f, got, addr)
				}
			}
			if !lookup(t, hello, "isWritablePrimary").Boolean() || lookup(t, hello, "secondary").Boolean() {
				t.Errorf("not a writable primary: %v", hello)
			}
			if v := lookup(t, hello, "setVersion"); v.Type != bson.TypeInt32 || v.Int32() != 1 {
				t.Errorf("setVersion %v", v)
			}
			if oid := lookup(t, hello, "electionId").ObjectID(); oid.Hex() != "7fffffff0000000000000001" {
				t.Errorf("electionId %s", oid.Hex())
			}
			if v := lookup(t, hello, "lastWrite", "opTime", "t"); v.Type != bson.TypeInt64 || v.Int64() != 1 {
				t.Errorf("lastWrite.opTime.t %v", v)
			}
			for _, f := range []string{"opTime", "majorityOpTime"} {
				if _, _, ok := lookup(t, hello, "lastWrite", f, "ts").TimestampOK(); !ok {
					t.Errorf("lastWrite.%s.ts is not a timestamp", f)
				}
			}
			for _, f := range []string{"lastWriteDate", "majorityWriteDate"} {
				if lookup(t, hello, "lastWrite", f).Type != bson.TypeDateTime {
					t.Errorf("lastWrite.%s is not a date", f)
				}
			}
			if v := lookup(t, hello, "topologyVersion", "counter"); v.Type != bson.TypeInt64 {
				t.Errorf("topologyVersion.counter %v", v)
			}
			if _, ok := lookup(t, hello, "topologyVersion", "processId").ObjectIDOK(); !ok {
				t.Errorf("topologyVersion.processId is not an ObjectId")
			}
			if v := lookup(t, hello, "logicalSessionTimeoutMinutes"); v.Int32() != 30 {
				t.Errorf("logicalSessionTimeoutMinutes %v", v)
			}
			legacy := run(t, client.Database("admin"), bson.D{{Key: "isMaster", Value: 1}})
			if !lookup(t, legacy, "ismaster").Boolean() || lookup(t, legacy, "secondary").Boolean() {
				t.Errorf("isMaster: %v", legacy)
			}
			if _, err := legacy.LookupErr("isWritablePrimary"); err == nil {
				t.Errorf("isMaster reports isWritablePrimary")
			}
		})
	}
}

// TestReplSetClusterTime: replies carry an unsigned $clusterTime and an
// operationTime, and every write moves the cluster time forward.
func TestReplSetClusterTime(t *testing.T) {
	_, client := startReplSet(t)
	db := client.Database("test")
	var last bson.Timestamp
	for i := range 3 {
		reply := run(t, db, bson.D{{Key: "insert", Value: "ct"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: i}}}}})
		tt, ti := lookup(t, reply, "operationTime").Timestamp()
		op := bson.Timestamp{T: tt, I: ti}
		if !last.Before(op) {
			t.Errorf("write %d: operationTime %v not after %v", i, op, last)
		}
		last = op
		ct, ci := lookup(t, reply, "$clusterTime", "clusterTime").Timestamp()
		if (bson.Timestamp{T: ct, I: ci}).Before(op) {
			t.Errorf("$clusterTime %v before operationTime %v", bson.Timestamp{T: ct, I: ci}, op)
		}
		sub, hash := lookup(t, reply, "$clusterTime", "signature", "hash").Binary()
		if sub != 0 || !bytes.Equal(hash, make([]byte, 20)) {
			t.Errorf("signature hash %d %x", sub, hash)
		}
		if v := lookup(t, reply, "$clusterTime", "signature", "keyId"); v.Type != bson.TypeInt64 || v.Int64() != 0 {
			t.Errorf("keyId %v", v)
		}
	}
	// The write's time is that of its oplog entry: the last of them for a
	// command that wrote several documents.
	reply := run(t, db, bson.D{{Key: "insert", Value: "ct"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 100}}, bson.D{{Key: "_id", Value: 101}}, bson.D{{Key: "_id", Value: 102}}}}})
	tt, ti := lookup(t, reply, "operationTime").Timestamp()
	last = bson.Timestamp{T: tt, I: ti}
	var entry struct {
		TS bson.Timestamp `bson:"ts"`
		NS string         `bson:"ns"`
	}
	if err := client.Database("local").Collection("oplog.rs").FindOne(testCtx(t), bson.D{},
		options.FindOne().SetSort(bson.D{{Key: "$natural", Value: -1}})).Decode(&entry); err != nil {
		t.Fatalf("newest oplog entry: %v", err)
	}
	if entry.TS != last || entry.NS != "test.ct" {
		t.Errorf("newest oplog entry %+v, want ts %v of the last insert into test.ct", entry, last)
	}
	// A read reports the last write's time, and does not move it.
	reply = run(t, db, bson.D{{Key: "find", Value: "ct"}})
	if tt, ti := lookup(t, reply, "operationTime").Timestamp(); (bson.Timestamp{T: tt, I: ti}) != last {
		t.Errorf("find operationTime %v, want %v", bson.Timestamp{T: tt, I: ti}, last)
	}
	// A causally consistent session reads its own write through
	// afterClusterTime, which the driver takes from operationTime.
	sess, err := client.StartSession(options.Session().SetCausalConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	err = mongo.WithSession(testCtx(t), sess, func(ctx context.Context) error {
		coll := db.Collection("ct", options.Collection().SetReadConcern(readconcern.Majority()))
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 10}}); err != nil {
			return err
		}
		return coll.FindOne(ctx, bson.D{{Key: "_id", Value: 10}}).Err()
	})
	if err != nil {
		t.Fatalf("causal session: %v", err)
	}
}

// TestReplSetReadConcern: every level is accepted outside a transaction
// (snapshot on find, aggregate and distinct only, as in MongoDB 5.0+), and
// afterClusterTime waits for the cluster time.
func TestReplSetReadConcern(t *testing.T) {
	_, client := startReplSet(t)
	db := client.Database("test")
	mustInsert(t, db.Collection("rc"), bson.D{{Key: "_id", Value: 1}})
	for _, level := range []string{"local", "majority", "linearizable", "available"} {
		run(t, db, bson.D{{Key: "find", Value: "rc"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: level}}}})
	}
	run(t, db, bson.D{{Key: "find", Value: "rc"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	ce := cmdError(t, client, "test", bson.D{{Key: "count", Value: "rc"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}})
	wantError(t, ce, 72, "InvalidOptions")
	ce = cmdError(t, client, "test", bson.D{{Key: "find", Value: "rc"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "eventual"}}}})
	wantError(t, ce, 2, "BadValue")

	reply := run(t, db, bson.D{{Key: "find", Value: "rc"}})
	tt, ti := lookup(t, reply, "operationTime").Timestamp()
	now := bson.Timestamp{T: tt, I: ti}
	// Reached already: answered at once.
	run(t, db, bson.D{{Key: "find", Value: "rc"}, {Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: now}}}})
	// Not reached: waits, up to maxTimeMS.
	future := bson.Timestamp{T: now.T, I: now.I + 1}
	ce = cmdError(t, client, "test", bson.D{{Key: "find", Value: "rc"}, {Key: "maxTimeMS", Value: 50},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"}, {Key: "afterClusterTime", Value: future}}}})
	wantError(t, ce, 50, "MaxTimeMSExpired")
	// ... and answers once a write moves the cluster time there.
	done := make(chan error, 1)
	go func() {
		done <- db.RunCommand(context.Background(), bson.D{{Key: "find", Value: "rc"}, {Key: "comment", Value: "waiting"},
			{Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: future}}}}).Err()
	}()
	waitForOpFrom(t, client, "find", "")
	mustInsert(t, db.Collection("rc"), bson.D{{Key: "_id", Value: 2}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("find after the write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("find with afterClusterTime still waiting after the write")
	}
}

// waitForOpFrom returns once currentOp lists a running command of that name,
// from client address from when it is not empty.
func waitForOpFrom(t *testing.T, client *mongo.Client, name, from string) {
	t.Helper()
	ctx := testCtx(t)
	// $all: a waiting hello is listed with the idle connections.
	filter := bson.D{{Key: "currentOp", Value: 1}, {Key: "$all", Value: true}, {Key: "command." + name, Value: bson.D{{Key: "$exists", Value: true}}}}
	if from != "" {
		filter = append(filter, bson.E{Key: "client", Value: from})
	}
	for ctx.Err() == nil {
		reply := run(t, client.Database("admin"), filter)
		if vals, _ := lookup(t, reply, "inprog").Array().Values(); len(vals) > 0 {
			return
		}
	}
	t.Fatalf("no %s in currentOp", name)
}

// waitForAwaiting returns once serverStatus counts at least n hellos
// waiting for a topology change.
func waitForAwaiting(t *testing.T, client *mongo.Client, n int64) {
	t.Helper()
	ctx := testCtx(t)
	for ctx.Err() == nil {
		ss := run(t, client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
		if lookup(t, ss, "connections", "awaitingTopologyChanges").Int64() >= n {
			return
		}
	}
	t.Fatalf("fewer than %d hellos awaiting a topology change", n)
}

// waitForNoOpFrom returns once currentOp lists nothing running for the
// client at address from.
func waitForNoOpFrom(t *testing.T, client *mongo.Client, from string) {
	t.Helper()
	ctx := testCtx(t)
	for ctx.Err() == nil {
		reply := run(t, client.Database("admin"), bson.D{{Key: "currentOp", Value: 1}, {Key: "$all", Value: true}, {Key: "client", Value: from}})
		if vals, _ := lookup(t, reply, "inprog").Array().Values(); len(vals) == 0 {
			return
		}
	}
	t.Fatalf("%s still runs a command after closing its connection", from)
}

// TestReplSetWriteConcern: w: 1, majority and j are met; w: 2 and unknown
// modes are not, and say so in writeConcernError after writing.
func TestReplSetWriteConcern(t *testing.T) {
	_, client := startReplSet(t)
	db := client.Database("test")
	for i, wc := range []*writeconcern.WriteConcern{{W: 1}, writeconcern.Majority(), writeconcern.Journaled()} {
		coll := db.Collection("wc", options.Collection().SetWriteConcern(wc))
		if _, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Errorf("write concern %v: %v", wc, err)
		}
	}
	for _, c := range []struct {
		w    any
		code int32
		name string
	}{{int32(2), 100, "UnsatisfiableWriteConcern"}, {"dc", 79, "UnknownReplWriteConcern"}} {
		id := c.name
		// The command succeeds; the driver reports its writeConcernError.
		reply, err := db.RunCommand(testCtx(t), bson.D{{Key: "insert", Value: "wc"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
			{Key: "writeConcern", Value: bson.D{{Key: "w", Value: c.w}}}}).Raw()
		if reply == nil {
			t.Fatalf("w: %v: %v", c.w, err)
		}
		if got := lookup(t, reply, "writeConcernError", "code").Int32(); got != c.code {
			t.Errorf("w: %v: writeConcernError code %d, want %d", c.w, got, c.code)
		}
		if got := lookup(t, reply, "writeConcernError", "codeName").StringValue(); got != c.name {
			t.Errorf("w: %v: codeName %s", c.w, got)
		}
		if n := count(t, db.Collection("wc"), bson.D{{Key: "_id", Value: id}}); n != 1 {
			t.Errorf("w: %v: the write is not done (%d)", c.w, n)
		}
	}
	// Through the driver, w: 2 is an error the application sees.
	coll := db.Collection("wc", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 2}))
	_, err := coll.InsertOne(testCtx(t), bson.D{{Key: "_id", Value: "driver"}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteConcernError == nil || we.WriteConcernError.Code != 100 {
		t.Errorf("w: 2 through the driver: %v", err)
	}
	ce := cmdError(t, client, "test", bson.D{{Key: "insert", Value: "wc"}, {Key: "documents", Value: bson.A{bson.D{}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: -1}}}})
	wantError(t, ce, 9, "FailedToParse")
}

// TestReplSetAdmin: rs.status(), rs.conf() and rs.initiate() answer as a
// one-member set; a standalone server refuses them.
func TestReplSetAdmin(t *testing.T) {
	ts, client := startReplSet(t)
	addr := ts.Srv.Addr().String()
	admin := client.Database("admin")
	status := run(t, admin, bson.D{{Key: "replSetGetStatus", Value: 1}})
	if lookup(t, status, "set").StringValue() != "rs0" || lookup(t, status, "myState").Int32() != 1 {
		t.Errorf("status: %v", status)
	}
	member := lookup(t, status, "members", "0").Document()
	if member.Lookup("name").StringValue() != addr || member.Lookup("stateStr").StringValue() != "PRIMARY" || !member.Lookup("self").Boolean() {
		t.Errorf("member: %v", member)
	}
	conf := run(t, admin, bson.D{{Key: "replSetGetConfig", Value: 1}})
	if lookup(t, conf, "config", "_id").StringValue() != "rs0" || lookup(t, conf, "config", "members", "0", "host").StringValue() != addr {
		t.Errorf("config: %v", conf)
	}
	ss := run(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	if lookup(t, ss, "repl", "setName").StringValue() != "rs0" || !lookup(t, ss, "repl", "ismaster").Boolean() {
		t.Errorf("serverStatus repl: %v", lookup(t, ss, "repl"))
	}
	if got := lookup(t, run(t, admin, bson.D{{Key: "getCmdLineOpts", Value: 1}}), "parsed", "replication", "replSet").StringValue(); got != "rs0" {
		t.Errorf("getCmdLineOpts replication.replSet %q", got)
	}
	run(t, admin, bson.D{{Key: "replSetInitiate", Value: bson.D{}}})
	run(t, admin, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"},
		{Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: addr}}}}}}})
	ce := cmdError(t, client, "admin", bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "other"},
		{Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: addr}}}}}}})
	wantError(t, ce, 93, "InvalidReplicaSetConfig")

	standalone := startServer(t)
	for _, cmd := range []string{"replSetGetStatus", "replSetGetConfig", "replSetInitiate"} {
		ce := cmdError(t, standalone.Client, "admin", bson.D{{Key: cmd, Value: 1}})
		wantError(t, ce, 76, "NoReplicationEnabled")
	}
	hello := run(t, standalone.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
	if _, err := hello.LookupErr("setName"); err == nil {
		t.Errorf("a standalone hello names a set: %v", hello)
	}
	if _, err := hello.LookupErr("$clusterTime"); err == nil {
		t.Errorf("a standalone reply carries $clusterTime")
	}
}

// TestAwaitableHello: in both modes a hello with the topologyVersion it
// was given and maxAwaitTimeMS waits, streams with exhaustAllowed, and
// ends at once when the server shuts down.
func TestAwaitableHello(t *testing.T) {
	for _, mode := range []string{"standalone", "replset"} {
		t.Run(mode, func(t *testing.T) {
			var opts []serverOption
			if mode == "replset" {
				opts = append(opts, withReplSet("rs0"))
			}
			ts := startServer(t, opts...)
			// The driver's monitor waits on the server instead of polling.
			waitForAwaiting(t, ts.Client, 1)
			c := dialRaw(t, ts)
			first := c.command(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})
			tv := lookup(t, first, "topologyVersion").Document()

			start := time.Now()
			c.command(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(100)}, {Key: "$db", Value: "admin"}})
			if d := time.Since(start); d < 100*time.Millisecond {
				t.Errorf("awaitable hello answered after %v, before maxAwaitTimeMS", d)
			}
			// Another process's topologyVersion: answered at once.
			c.command(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(0)}}},
				{Key: "maxAwaitTimeMS", Value: int64(60_000)}, {Key: "$db", Value: "admin"}})
			bad := c.command(bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: int64(1)}, {Key: "$db", Value: "admin"}})
			if code := lookup(t, bad, "code").Int32(); code != 31368 && code != 51760 {
				t.Errorf("maxAwaitTimeMS without topologyVersion: %v", bad)
			}

			// exhaustAllowed: replies stream, each answering the one before.
			c.nextID++
			c.send(wire.AppendMsg(nil, c.nextID, 0, &wire.Msg{Flags: wire.FlagExhaustAllowed, Body: marshalDoc(t,
				bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(10)}, {Key: "$db", Value: "admin"}})}))
			responseTo := c.nextID
			for i := range 3 {
				m := c.receive()
				if m.Msg == nil || m.Msg.Flags&wire.FlagMoreToCome == 0 || m.Header.ResponseTo != responseTo {
					t.Fatalf("streamed reply %d: flags %v, responseTo %d, want moreToCome and %d", i, m.Msg.Flags, m.Header.ResponseTo, responseTo)
				}
				if ok := bson.Raw(m.Msg.Body).Lookup("ok").Double(); ok != 1 {
					t.Fatalf("streamed reply %d: %v", i, bson.Raw(m.Msg.Body))
				}
				responseTo = m.Header.RequestID
			}

			// A waiting hello ends when its client goes away.
			gone := dialRaw(t, ts)
			gone.send(gone.msgFrame(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(600_000)}, {Key: "$db", Value: "admin"}}))
			waitForOpFrom(t, ts.Client, "hello", gone.LocalAddr().String())
			gone.Close()
			waitForNoOpFrom(t, ts.Client, gone.LocalAddr().String())

			// Shutdown answers a waiting hello at once with ShutdownInProgress.
			w := dialRaw(t, ts)
			w.send(w.msgFrame(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: int64(600_000)}, {Key: "$db", Value: "admin"}}))
			waitForOpFrom(t, ts.Client, "hello", w.LocalAddr().String())
			// The client first: once its monitor learns of the shutdown,
			// ending its sessions would wait for server selection.
			ts.Client.Disconnect(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			stopped := make(chan error, 1)
			go func() { stopped <- ts.Srv.Shutdown(ctx) }()
			reply := bson.Raw(w.receive().Msg.Body)
			if code := lookup(t, reply, "code").Int32(); code != 91 {
				t.Errorf("hello at shutdown: %v", reply)
			}
			if err := <-stopped; err != nil {
				t.Errorf("shutdown with an awaiting hello: %v", err)
			}
		})
	}
}

// TestReplSetClients: mongosh, the Node.js driver and pymongo connect to the
// set by name and see a one-member set's primary.
func TestReplSetClients(t *testing.T) {
	ts := startServer(t, withReplSet("rs0"))
	uri := ts.URI + "test?replicaSet=rs0"
	t.Run("mongosh", func(t *testing.T) {
		requireClient(t, exists(mongoshPath), "mongosh", "npm ci --prefix integration/clients (make test does it)")
		for _, tc := range []struct{ eval, want string }{
			{"rs.status().members[0].stateStr", "PRIMARY"},
			{"rs.status().set", "rs0"},
			{"rs.conf().members.length", "1"},
			{"rs.initiate().ok", "1"},
			{"db.hello().setName", "rs0"},
		} {
			for _, u := range []string{uri, ts.URI + "test"} {
				stdout, stderr := runClient(t, mongoshPath, u, "--quiet", "--eval", tc.eval)
				if got := strings.TrimSpace(stdout); got != tc.want || stderr != "" {
					t.Errorf("mongosh %s --eval %q printed %q, want %q; stderr %q", u, tc.eval, stdout, tc.want, stderr)
				}
			}
		}
	})
	t.Run("node", func(t *testing.T) { runNodeScript(t, "replset.mjs", uri) })
	t.Run("pymongo", func(t *testing.T) { runPythonScript(t, "replset.py", uri) })
}
