package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
)

// codeExceededMemoryLimit is what a cursor beyond the limits gets.
const codeExceededMemoryLimit = 146

func withCursorLimits(l server.CursorLimits) serverOption {
	return func(c *server.Config) { c.Cursors = l }
}

// openCursors opens up to n cursors over coll on c, each with one document
// left to read, and returns how many opened and the error that stopped it.
func openCursors(t *testing.T, c *rawConn, n int, cmd bson.D) (int, bson.Raw) {
	t.Helper()
	for i := range n {
		reply := c.command(cmd)
		if ok := lookup(t, reply, "ok").AsFloat64(); ok != 1 {
			return i, reply
		}
		if lookup(t, reply, "cursor", "id").Int64() == 0 {
			t.Fatalf("%v opened no cursor: %s", cmd, reply)
		}
	}
	return n, nil
}

// fillCursors opens cursors with cmd from ip, a connection at a time, each
// closed once it has opened all a connection may (--max-cursors-per-conn):
// open cursors outlive their connections, in MongoDB as in Lethe, so a
// client that reconnects keeps going. It stops at the first refusal
// of another limit and returns how many cursors opened and that refusal.
func fillCursors(t *testing.T, ts *testServer, ip string, cmd bson.D) (int, bson.Raw) {
	t.Helper()
	total := 0
	for {
		c := dialRawFrom(t, ts, ip)
		n, refusal := openCursors(t, c, server.DefaultMaxCursorsPerConn+1, cmd)
		c.Close()
		total += n
		if refusal == nil {
			t.Fatalf("a connection from %s opened %d cursors, limit %d per connection", ip, n, server.DefaultMaxCursorsPerConn)
		}
		if code := lookup(t, refusal, "code").AsInt64(); code != codeExceededMemoryLimit {
			t.Fatalf("cursor %d from %s refused with %s, want code %d", total+1, ip, refusal, codeExceededMemoryLimit)
		}
		if !strings.Contains(lookup(t, refusal, "errmsg").StringValue(), "--max-cursors-per-conn") {
			return total, refusal
		}
	}
}

// wantRefusal checks that a refusal names the limit it hit.
func wantRefusal(t *testing.T, refusal bson.Raw, flag string) {
	t.Helper()
	if msg := lookup(t, refusal, "errmsg").StringValue(); !strings.Contains(msg, flag) {
		t.Errorf("refusal %q does not name %s", msg, flag)
	}
}

// readAll runs a find of batch size 1 through the driver and reads all of
// it: a query that needs a cursor to stay open between batches.
func readAll(ctx context.Context, coll *mongo.Collection) (int, error) {
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		return 0, err
	}
	defer cur.Close(ctx)
	n := 0
	for cur.Next(ctx) {
		n++
	}
	return n, cur.Err()
}

// TestCursorFlood is issue 17's attack on cursors: a client, read-only
// would do, opens find cursors and leaves them open, connection after
// connection (20,000 of them once took 872 MiB). It used to fill
// --max-cursors, after which every other client's multi-batch query failed
// with 146 until the cursors timed out ten minutes later. MongoDB bounds
// no count of cursors (its cursor manager, cursor_manager.cpp, only times
// idle ones out, after cursorTimeoutMillis); Lethe bounds them to keep its
// memory, and bounds each client's to a quarter, so the attacker is
// refused itself and the others' queries go on until four clients have
// filled the server.
func TestCursorFlood(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("test").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	find := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "test"}}

	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		n, refusal := fillCursors(t, ts, "127.0.0.2", find)
		if n != server.DefaultMaxCursorsPerClient {
			t.Fatalf("one client opened %d cursors, limit %d per client", n, server.DefaultMaxCursorsPerClient)
		}
		wantRefusal(t, refusal, "client 127.0.0.2 has 2500 open, the most one client may (--max-cursors-per-client)")
		// Everyone else's queries go on.
		if n, err := readAll(ctx, coll); err != nil || n != 2 {
			t.Errorf("a bystander's multi-batch find: %d documents, %v", n, err)
		}
		// The server-wide bound still holds, once enough clients fill it.
		for i, ip := range []string{"127.0.0.3", "127.0.0.4", "127.0.0.5"} {
			if n, refusal := fillCursors(t, ts, ip, find); n != server.DefaultMaxCursorsPerClient {
				t.Fatalf("client %d opened %d cursors, then %s", i+2, n, refusal)
			}
		}
		if n, refusal := fillCursors(t, ts, "127.0.0.6", find); n != 0 {
			t.Fatalf("a fifth client opened %d cursors with %d open", n, server.DefaultMaxCursors)
		} else {
			wantRefusal(t, refusal, "(--max-cursors)")
		}
		if _, err := ts.Client.Database("test").RunCommand(ctx, find).Raw(); errCode(err) != codeExceededMemoryLimit {
			t.Errorf("a driver's find at the limit: %v, want code %d", err, codeExceededMemoryLimit)
		}
	})
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if open := lookup(t, status, "metrics", "cursor", "open", "total").AsInt64(); open != server.DefaultMaxCursors {
		t.Errorf("serverStatus counts %d open cursors, want %d", open, server.DefaultMaxCursors)
	}
}

// TestCursorMemoryLimit keeps aggregation results open in cursors, 1 MiB
// each, as issue 17's client did with idle sorted cursors: they count
// against the client's share (--max-cursor-memory-per-client-mib, half of
// --max-cursor-memory-mib), a cursor beyond it is refused, another
// client's aggregation is still served, and all clients together stop at
// --max-cursor-memory-mib (100 MiB, MongoDB's 100 MiB memory limit of a
// blocking stage: internalQueryMaxBlockingSortMemoryUsageBytes).
func TestCursorMemoryLimit(t *testing.T) {
	const limit, perClient = server.DefaultMaxCursorMemory, server.DefaultMaxCursorMemoryPerClient
	ts := startServer(t)
	coll := ts.Client.Database("test").Collection("big")
	pad := strings.Repeat("x", 100<<10)
	var docs []any
	for i := range 10 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}})
	}
	mustInsert(t, coll, docs...) // about 1 MiB

	agg := bson.D{{Key: "aggregate", Value: "big"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 0}}}, {Key: "$db", Value: "test"}}
	c := dialRawFrom(t, ts, "127.0.0.2")
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		n, refusal := openCursors(t, c, 300, agg)
		if refusal == nil {
			t.Fatalf("300 cursors of 1 MiB each opened under a limit of %d MiB", limit>>20)
		}
		if code := lookup(t, refusal, "code").AsInt64(); code != codeExceededMemoryLimit {
			t.Fatalf("refused with %s, want code %d", refusal, codeExceededMemoryLimit)
		}
		if n < perClient>>20 || n > perClient/1_000_000 {
			t.Errorf("%d cursors of about 1 MiB opened under a limit of %d MiB per client", n, perClient>>20)
		}
		wantRefusal(t, refusal, "(--max-cursor-memory-per-client-mib)")
		t.Logf("%d cursors held before the refusal: %s", n, lookup(t, refusal, "errmsg").StringValue())

		// Another client's aggregation keeps its results open all the same.
		cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}, options.Aggregate().SetBatchSize(1))
		if err != nil {
			t.Fatalf("a bystander's aggregation: %v", err)
		}
		var got []bson.Raw
		if err := cur.All(ctx, &got); err != nil || len(got) != 10 {
			t.Errorf("a bystander's aggregation: %d documents, %v", len(got), err)
		}

		// Two clients fill their shares, about all of the server's, and a
		// third meets the server-wide bound.
		total := n
		for _, ip := range []string{"127.0.0.3", "127.0.0.4"} {
			other := dialRawFrom(t, ts, ip)
			m, refusal := openCursors(t, other, 300, agg)
			other.Close()
			total += m
			if refusal == nil {
				t.Fatalf("client %s opened 300 cursors of 1 MiB", ip)
			}
			if ip == "127.0.0.4" {
				wantRefusal(t, refusal, "(--max-cursor-memory)")
			}
		}
		if total > limit/1_000_000 || total < limit>>20-1 {
			t.Errorf("three clients opened %d cursors of about 1 MiB under a limit of %d MiB", total, limit>>20)
		}
	})
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if held := lookup(t, status, "lethe", "cursorMemory").AsInt64(); held < limit-(2<<20) || held > limit {
		t.Errorf("serverStatus says cursors hold %d bytes, limit %d", held, limit)
	}

	// A sorted find holds its results too.
	sorted := bson.D{{Key: "find", Value: "big"}, {Key: "sort", Value: bson.D{{Key: "pad", Value: 1}}}, {Key: "batchSize", Value: 0}, {Key: "$db", Value: "test"}}
	if reply := c.command(sorted); lookup(t, reply, "code").AsInt64() != codeExceededMemoryLimit {
		t.Errorf("sorted find at the memory limit: %s, want code %d", reply, codeExceededMemoryLimit)
	}
}

// TestGetMoreInAnotherSession: a cursor belongs to the session it was
// opened in; getMore from another session, or without one, is refused with
// MongoDB's codes, and the owner can still read it.
func TestGetMoreInAnotherSession(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("test").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}})
	ctx := testCtx(t)

	lsid := func(b byte) bson.D {
		return bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte{b, 1, 2, 3, 4, 5, 0x46, 7, 0x88, 9, 10, 11, 12, 13, 14, 15}}}}
	}
	c := dialRaw(t, ts)
	open := func(session bson.D) int64 {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "test"}}
		if session != nil {
			cmd = append(cmd, bson.E{Key: "lsid", Value: session})
		}
		return lookup(t, c.command(cmd), "cursor", "id").Int64()
	}
	getMore := func(id int64, session bson.D) bson.Raw {
		cmd := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "test"}}
		if session != nil {
			cmd = append(cmd, bson.E{Key: "lsid", Value: session})
		}
		return c.command(cmd)
	}
	wantRawCode := func(reply bson.Raw, code int64, msg string) {
		t.Helper()
		if got := lookup(t, reply, "code").AsInt64(); got != code {
			t.Fatalf("got %s, want code %d", reply, code)
		}
		if got := lookup(t, reply, "errmsg").StringValue(); !strings.Contains(got, msg) {
			t.Errorf("errmsg %q lacks %q", got, msg)
		}
	}

	inA := open(lsid(0xa))
	wantRawCode(getMore(inA, lsid(0xb)), 50738, "which was created in session 0a010203-0405-4607-8809-0a0b0c0d0e0f - 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= -  - , in session 0b010203-")
	wantRawCode(getMore(inA, nil), 50737, ", without an lsid")
	if ok := lookup(t, getMore(inA, lsid(0xa)), "ok").AsFloat64(); ok != 1 {
		t.Error("the owner's getMore failed after the refusals")
	}
	outside := open(nil)
	wantRawCode(getMore(outside, lsid(0xb)), 50736, "which was not created in a session, in session 0b010203-")

	// Through the driver: a cursor's own getMores carry its session.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.Raw
	for cur.Next(ctx) {
		all = append(all, cur.Current)
	}
	if err := cur.Err(); err != nil || len(all) != 3 {
		t.Fatalf("driver cursor: %d documents, %v", len(all), err)
	}
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	// Another (implicit) session may not read it.
	_, err = coll.Database().RunCommand(ctx, bson.D{{Key: "getMore", Value: cur.ID()}, {Key: "collection", Value: "c"}}).Raw()
	wantCode(t, err, 50738)
}

// TestCursorCommandArguments checks getMore's and killCursors' argument
// types against MongoDB's parser: cursor ids are longs.
func TestCursorCommandArguments(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	mustInsert(t, db.Collection("c"), bson.D{{Key: "_id", Value: 1}})
	for _, tc := range []struct {
		cmd  bson.D
		code int
		msg  string
	}{
		{bson.D{{Key: "getMore", Value: int32(5)}, {Key: "collection", Value: "c"}}, 14, "BSON field 'getMore.getMore' is the wrong type 'int', expected type 'long'"},
		{bson.D{{Key: "getMore", Value: 5.0}, {Key: "collection", Value: "c"}}, 14, "BSON field 'getMore.getMore' is the wrong type 'double', expected type 'long'"},
		{bson.D{{Key: "getMore", Value: "5"}, {Key: "collection", Value: "c"}}, 14, "expected type 'long'"},
		{bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: 1}}, 14, "BSON field 'getMore.collection' is the wrong type 'int', expected type 'string'"},
		{bson.D{{Key: "getMore", Value: int64(5)}}, 40414, "BSON field 'getMore.collection' is missing but a required field"},
		{bson.D{{Key: "getMore", Value: int64(5)}, {Key: "collection", Value: "c"}}, 43, "cursor id 5 not found"},
		{bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{int32(5)}}}, 14, "expected type 'long'"},
		{bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: "5"}}, 14, "BSON field 'killCursors.cursors' is the wrong type 'string', expected type 'array'"},
	} {
		_, err := db.RunCommand(testCtx(t), tc.cmd).Raw()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || int(ce.Code) != tc.code || !strings.Contains(ce.Message, tc.msg) {
			t.Errorf("%v: got %v, want code %d %q", tc.cmd, err, tc.code, tc.msg)
		}
	}
}
