package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// mongosHelloFields are the fields of a mongos's hello reply, in its
// order, when the request asks for nothing optional (no helloOk,
// compression or authentication): MongosHelloResponse::appendToBuilder
// (isWritablePrimary, msg, topologyVersion), then CmdHello::
// runWithReplyBuilder in src/mongo/s/commands/cluster_hello_cmd.cpp
// (maxBsonObjectSize ... connectionId, then maxWireVersion before
// minWireVersion; no readOnly, no setName, no hosts).
var mongosHelloFields = []string{"isWritablePrimary", "msg", "topologyVersion", "maxBsonObjectSize",
	"maxMessageSizeBytes", "maxWriteBatchSize", "localTime", "logicalSessionTimeoutMinutes", "connectionId",
	"maxWireVersion", "minWireVersion"}

// clusterSeedClient connects one client to every server of a cluster by a
// seed list, as an application given all of them in its connection
// string; opts apply after.
func clusterSeedClient(t *testing.T, servers []*testServer, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	var hosts []string
	for _, ts := range servers {
		hosts = append(hosts, ts.Srv.Addr().String())
	}
	base := options.Client().ApplyURI("mongodb://" + strings.Join(hosts, ",") + "/").
		SetServerSelectionTimeout(5 * time.Second).SetHeartbeatInterval(500 * time.Millisecond)
	client, err := mongo.Connect(append([]*options.ClientOptions{base}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	return client
}

// createEverywhere creates the collections of db through the first
// server; every server knows them once create has answered.
func createEverywhere(t *testing.T, servers []*testServer, db string, colls ...string) {
	t.Helper()
	for _, c := range colls {
		if err := servers[0].Client.Database(db).CreateCollection(testCtx(t), c); err != nil {
			t.Fatal(err)
		}
	}
}

// testManyServersHello: each server of a shared store answers hello as a
// mongos does, field for field and in its order, then lists the live
// servers (Lethe's own field, last), and isMaster spells ismaster.
func testManyServersHello(t *testing.T) {
	servers := startCluster(t, 3)
	var want []string
	for _, ts := range servers {
		want = append(want, ts.Srv.Addr().String())
	}
	slices.Sort(want)
	for i, ts := range servers {
		reply := run(t, ts.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
		elems, err := reply.Elements()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, e := range elems {
			keys = append(keys, e.Key())
		}
		if len(keys) < len(mongosHelloFields) || !slices.Equal(keys[:len(mongosHelloFields)], mongosHelloFields) {
			t.Fatalf("server %d: hello's fields %v, want a mongos's %v first", i, keys, mongosHelloFields)
		}
		// Then Lethe's hosts, and what every reply of a mongos carries.
		if rest := keys[len(mongosHelloFields):]; !slices.Equal(rest, []string{"hosts", "ok", "$clusterTime", "operationTime"}) {
			t.Errorf("server %d: hello's fields after a mongos's: %v", i, rest)
		}
		if msg := lookup(t, reply, "msg").StringValue(); msg != "isdbgrid" {
			t.Errorf("server %d: msg %q", i, msg)
		}
		if !lookup(t, reply, "isWritablePrimary").Boolean() {
			t.Errorf("server %d: not writable", i)
		}
		legacy := run(t, ts.Client.Database("admin"), bson.D{{Key: "isMaster", Value: 1}})
		if first := legacy.Index(0); first.Key() != "ismaster" || !first.Value().Boolean() {
			t.Errorf("server %d: isMaster starts with %s", i, first)
		}
		if msg := lookup(t, legacy, "msg").StringValue(); msg != "isdbgrid" {
			t.Errorf("server %d: isMaster's msg %q", i, msg)
		}
		// The servers started one after another: the first may have read
		// the roster before the others joined, and reads it again after
		// router.RosterAge.
		deadline := time.Now().Add(10 * time.Second)
		for {
			reply := run(t, ts.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
			var got []string
			vals, _ := lookup(t, reply, "hosts").Array().Values()
			for _, v := range vals {
				got = append(got, v.StringValue())
			}
			if slices.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d: hosts %v, want %v", i, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// testManyServersDriverTopology: a driver given all three servers sees a
// sharded cluster of three mongoses (the SDAM specification's ServerType
// Mongos, TopologyType Sharded; the Go driver's topology/fsm.go), spreads
// its operations over all three, runs transactions pinned to one of them,
// and sends retryable writes with transaction numbers.
func testManyServersDriverTopology(t *testing.T) {
	servers := startCluster(t, 3)
	createEverywhere(t, servers, "topo", "spread", "txn")
	var mu sync.Mutex
	var kinds []string
	serverKinds := map[string]string{}
	sm := &event.ServerMonitor{
		TopologyDescriptionChanged: func(e *event.TopologyDescriptionChangedEvent) {
			mu.Lock()
			defer mu.Unlock()
			kinds = append(kinds, e.NewDescription.Kind)
			for _, s := range e.NewDescription.Servers {
				serverKinds[s.Addr.String()] = s.Kind
			}
		},
	}
	var txnNumbers, inserts int
	cm := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName != "insert" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		inserts++
		if _, err := e.Command.LookupErr("txnNumber"); err == nil {
			txnNumbers++
		}
	}}
	// A latency window of a second rather than 15 ms, so that a round
	// trip slowed by a loaded test machine does not take a server out of
	// the choice for the whole run.
	client := clusterSeedClient(t, servers, options.Client().SetServerMonitor(sm).SetMonitor(cm).SetLocalThreshold(time.Second))
	ctx := testCtx(t)
	if err := client.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Every server is discovered a mongos, and the topology sharded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		mongoses := 0
		for _, ts := range servers {
			if serverKinds[ts.Srv.Addr().String()] == "Mongos" {
				mongoses++
			}
		}
		sharded := len(kinds) > 0 && kinds[len(kinds)-1] == "Sharded"
		mu.Unlock()
		if mongoses == len(servers) && sharded {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("topology kinds %v, servers %v: want Sharded with %d Mongos", kinds, serverKinds, len(servers))
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Operations spread over the servers: each server's opcounters, read
	// through its own client, count some of the client's inserts and
	// queries. With 60 of each picked at random among three servers, one
	// server misses all of a kind with odds of 3·(2/3)^60, under 10^-10.
	opcounters := func(ts *testServer) (insert, query int64) {
		st := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
		return lookup(t, st, "opcounters", "insert").AsInt64(), lookup(t, st, "opcounters", "query").AsInt64()
	}
	type counts struct{ insert, query int64 }
	before := make([]counts, len(servers))
	for i, ts := range servers {
		before[i].insert, before[i].query = opcounters(ts)
	}
	coll := client.Database("topo").Collection("spread")
	for i := 0; i < 60; i++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: i}}).Err(); err != nil {
			t.Fatalf("find %d: %v", i, err)
		}
	}
	for i, ts := range servers {
		insert, query := opcounters(ts)
		if insert == before[i].insert || query == before[i].query {
			t.Errorf("server %d served %d inserts and %d queries of the seed-list client's 60 each",
				i, insert-before[i].insert, query-before[i].query)
		}
	}
	mu.Lock()
	if txnNumbers != inserts || inserts < 60 {
		t.Errorf("%d of %d inserts carried a txnNumber: the driver must see retryable writes", txnNumbers, inserts)
	}
	mu.Unlock()

	// A transaction commits, through whichever server the driver pins it to.
	txns := client.Database("topo").Collection("txn")
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		for _, id := range []string{"a", "b"} {
			if _, err := txns.InsertOne(sc, bson.D{{Key: "_id", Value: id}}); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		t.Fatalf("transaction: %v", err)
	}
	// And one that fails aborts: none of its writes is seen anywhere.
	errAbort := errors.New("abort on purpose")
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := txns.InsertOne(sc, bson.D{{Key: "_id", Value: "c"}}); err != nil {
			return nil, err
		}
		return nil, errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("aborted transaction: %v", err)
	}
	var committed, aborted int64
	for i, ts := range servers {
		ids, err := ts.Client.Database("topo").Collection("txn").Distinct(ctx, "_id", bson.D{}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if vals, _ := ids.Values(); len(vals) != 2 || vals[0].StringValue() != "a" || vals[1].StringValue() != "b" {
			t.Errorf("server %d sees %v, want the committed a and b only", i, ids)
		}
		st := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
		committed += lookup(t, st, "transactions", "totalCommitted").AsInt64()
		aborted += lookup(t, st, "transactions", "totalAborted").AsInt64()
	}
	if committed != 1 || aborted != 1 {
		t.Errorf("the servers committed %d and aborted %d transactions, want 1 and 1", committed, aborted)
	}

	// A causally consistent session reads its write on whichever server
	// comes next: its afterClusterTime, from one server, holds up no other.
	causal, err := client.StartSession(options.Session().SetCausalConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	defer causal.EndSession(context.Background())
	for i := 0; i < 12; i++ {
		err := mongo.WithSession(ctx, causal, func(sc context.Context) error {
			if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: i}}}}); err != nil {
				return err
			}
			var doc struct{ N int }
			if err := coll.FindOne(sc, bson.D{{Key: "_id", Value: 0}}).Decode(&doc); err != nil {
				return err
			}
			if doc.N != i {
				t.Errorf("read %d after writing %d", doc.N, i)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("causal step %d: %v", i, err)
		}
	}
}

// testManyServersCursors: a cursor lives on the server that opened it: a
// getMore for its id on another server fails with CursorNotFound (43), as
// mongod answers an id it does not know (getmore_cmd.cpp), and killCursors
// there reports it not found; currentOp and killOp see each server's own
// operations, each entry naming its server in host, as mongod and mongos
// do (CurOp::reportCurrentOpForClient).
func testManyServersCursors(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := testCtx(t)
	a, b := servers[0], servers[1]
	db := a.Client.Database("topo")
	var docs []any
	for i := 0; i < 5; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	if _, err := db.Collection("cur").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	reply := run(t, db, bson.D{{Key: "find", Value: "cur"}, {Key: "batchSize", Value: 2}})
	id := lookup(t, reply, "cursor", "id").Int64()
	if id == 0 {
		t.Fatal("find returned no cursor")
	}
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "cur"}, {Key: "batchSize", Value: 1}}
	err := b.Client.Database("topo").RunCommand(ctx, getMore).Err()
	wantCode(t, err, 43)
	killed := run(t, b.Client.Database("topo"), bson.D{{Key: "killCursors", Value: "cur"}, {Key: "cursors", Value: bson.A{id}}})
	if nf, _ := lookup(t, killed, "cursorsNotFound").Array().Values(); len(nf) != 1 || nf[0].Int64() != id {
		t.Errorf("killCursors on another server: %s", killed)
	}
	// The cursor is still open where it was opened.
	more := run(t, db, getMore)
	if batch, _ := lookup(t, more, "cursor", "nextBatch").Array().Values(); len(batch) != 1 {
		t.Errorf("getMore on the cursor's server: %s", more)
	}

	for i, ts := range servers {
		ops := run(t, ts.Client.Database("admin"), bson.D{{Key: "currentOp", Value: 1}})
		vals, _ := lookup(t, ops, "inprog").Array().Values()
		var own bson.Raw
		for _, v := range vals {
			d := v.Document()
			if _, err := d.LookupErr("command", "currentOp"); err == nil {
				own = d
			}
		}
		if own == nil {
			t.Fatalf("server %d: currentOp does not list itself: %s", i, ops)
		}
		if k := own.Index(1).Key(); k != "host" {
			t.Errorf("server %d: currentOp's entry has %s after type, want host: %s", i, k, own)
		}
		_, port, _ := strings.Cut(ts.Srv.Addr().String(), ":")
		if host := lookup(t, own, "host").StringValue(); !strings.HasSuffix(host, ":"+port) {
			t.Errorf("server %d (port %s): currentOp's host %q", i, port, host)
		}
	}
}

// testManyServersRetryElsewhere: a retryable write that a driver sends
// again to another server, as it does when the first server fails (the
// retryable writes specification: the retry selects a server anew,
// avoiding the one that failed, among mongoses), is answered from the
// statement's record in the store: applied once, answered alike.
func testManyServersRetryElsewhere(t *testing.T) {
	servers := startCluster(t, 3)
	createEverywhere(t, servers, "app", "c")
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("elsewhere-0123ab")}}}
	upsert := retryCmd(lsid, 3, bson.E{Key: "update", Value: "c"}, bson.E{Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "k"}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}},
	}})
	for i, ts := range servers {
		reply := dialRaw(t, ts).command(upsert)
		if ok := lookup(t, reply, "ok").AsFloat64(); ok != 1 {
			t.Fatalf("server %d: %s", i, reply)
		}
		if n := lookup(t, reply, "n").AsInt64(); n != 1 {
			t.Errorf("server %d: n %d: %s", i, n, reply)
		}
		if id := lookup(t, reply, "upserted", "0", "_id").StringValue(); id != "k" {
			t.Errorf("server %d: upserted %q", i, id)
		}
	}
	var doc struct{ N int }
	if err := servers[2].Client.Database("app").Collection("c").FindOne(testCtx(t), bson.D{{Key: "_id", Value: "k"}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.N != 1 {
		t.Errorf("n = %d after one write retried on two other servers, want 1", doc.N)
	}
}

// testManyServersClients: mongosh and pymongo, given the three servers in
// their connection string, see mongoses, spread their work and run
// transactions (clients/manyservers.js, clients/manyservers.py).
func testManyServersClients(t *testing.T) {
	servers := startCluster(t, 3)
	createEverywhere(t, servers, "topo", "shell", "py")
	var hosts []string
	for _, ts := range servers {
		hosts = append(hosts, ts.Srv.Addr().String())
	}
	uri := "mongodb://" + strings.Join(hosts, ",") + "/"
	t.Run("mongosh", func(t *testing.T) { runMongoshScriptWith(t, uri+"test", nil, "manyservers.js") })
	t.Run("pymongo", func(t *testing.T) { runPythonScript(t, "manyservers.py", uri) })
}

// testManyServersPinnedServerDies: a transaction pinned to a server that
// then stops fails with TransientTransactionError (the transactions
// specification: drivers label a network error in a transaction so, and
// unpin), and the driver's WithTransaction runs it again from the start on
// another server; nothing of the first attempt is committed.
func testManyServersPinnedServerDies(t *testing.T) {
	servers := startCluster(t, 3)
	createEverywhere(t, servers, "topo", "die")
	// The next statement either finds its connection closed or, if the
	// monitor saw the server go first, waits for the pinned server for
	// the server selection timeout: both fail as transient.
	client := clusterSeedClient(t, servers, options.Client().SetServerSelectionTimeout(time.Second))
	ctx := testCtx(t)
	coll := client.Database("topo").Collection("die")
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(context.Background())
	attempts, transient := 0, false
	var dead *testServer
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		attempts++
		if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: attempts}}); err != nil {
			return nil, err
		}
		if attempts == 1 {
			// The server that holds the open transaction is the one the
			// session is pinned to: stop it.
			for _, ts := range servers {
				st := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
				if lookup(t, st, "transactions", "currentOpen").AsInt64() == 1 {
					dead = ts
				}
			}
			if dead == nil {
				t.Fatal("no server holds the open transaction")
			}
			// Its own client first, which would otherwise wait out its
			// disconnect timeout on a dead server when the test ends.
			dead.Client.Disconnect(ctx)
			if err := dead.Srv.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		}
		_, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: "second"}})
		var le mongo.LabeledError
		if errors.As(err, &le) && le.HasErrorLabel("TransientTransactionError") {
			transient = true
		}
		return nil, err
	})
	if err != nil {
		t.Fatalf("transaction: %v", err)
	}
	if attempts != 2 || !transient {
		t.Errorf("%d attempts, TransientTransactionError seen: %v; want 2 attempts after one", attempts, transient)
	}
	for _, ts := range servers {
		if ts == dead {
			continue
		}
		ids, err := ts.Client.Database("topo").Collection("die").Distinct(ctx, "_id", bson.D{}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		if vals, _ := ids.Values(); len(vals) != 2 || vals[0].AsInt64() != 2 || vals[1].StringValue() != "second" {
			t.Errorf("%s sees %v, want only the second attempt's 2 and second", ts.Srv.Addr(), ids)
		}
	}
}

// testManyServersAdvertise: a server names itself on the roster, and so in
// every server's hello, by --advertise-addr; without it, by the address it
// listens on, with the machine's host name for an unspecified IP.
func testManyServersAdvertise(t *testing.T) {
	servers := startCluster(t, 1)
	join := func(listen, advertise string) *testServer {
		ts := &testServer{Clock: servers[0].Clock, Dir: t.TempDir(), Logs: servers[0].Logs, mock: servers[0].mock}
		ts.cfg = servers[0].cfg
		ts.cfg.DataDir, ts.cfg.Listen, ts.cfg.AdvertiseAddr = ts.Dir, listen, advertise
		ts.start(t)
		t.Cleanup(func() { ts.stop(t) })
		return ts
	}
	join("127.0.0.1:0", "db-two.example:27017")
	wild := join("0.0.0.0:0", "")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(wild.Srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{servers[0].Srv.Addr().String(), "db-two.example:27017", net.JoinHostPort(host, port)}
	slices.Sort(want)
	deadline := time.Now().Add(10 * time.Second)
	for {
		reply := run(t, servers[0].Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
		var got []string
		vals, _ := lookup(t, reply, "hosts").Array().Values()
		for _, v := range vals {
			got = append(got, v.StringValue())
		}
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hosts %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
