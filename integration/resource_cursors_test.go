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

// TestCursorFlood has one connection open find cursors without end (20,000
// of them took 872 MiB before the limits): it is refused at the
// per-connection limit, further connections at the total one, and the
// heap stays within bounds.
func TestCursorFlood(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("test").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	find := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "test"}}

	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		var conns []*rawConn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		total := 0
		for range server.DefaultMaxCursors/server.DefaultMaxCursorsPerConn + 1 {
			c := dialRaw(t, ts)
			conns = append(conns, c)
			n, refusal := openCursors(t, c, server.DefaultMaxCursorsPerConn+1, find)
			total += n
			if refusal == nil {
				t.Fatalf("connection %d opened %d cursors, limit %d", len(conns), n, server.DefaultMaxCursorsPerConn)
			}
			if code := lookup(t, refusal, "code").AsInt64(); code != codeExceededMemoryLimit {
				t.Fatalf("cursor %d refused with %s, want code %d", total+1, refusal, codeExceededMemoryLimit)
			}
			if msg := lookup(t, refusal, "errmsg").StringValue(); total >= server.DefaultMaxCursors && !strings.Contains(msg, "--max-cursors ") && !strings.Contains(msg, "(--max-cursors)") {
				t.Fatalf("refusal at %d open cursors: %q, want the total limit", total, msg)
			}
		}
		if total != server.DefaultMaxCursors {
			t.Errorf("%d cursors opened in all, limit %d", total, server.DefaultMaxCursors)
		}
		// The limit is on open cursors: killing one frees a slot.
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
// each: they count against --max-cursor-memory (100 MiB by default), a
// cursor beyond it is refused, and the heap stays within bounds.
func TestCursorMemoryLimit(t *testing.T) {
	const limit = server.DefaultMaxCursorMemory
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
	c := dialRaw(t, ts)
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		n, refusal := openCursors(t, c, 300, agg)
		if refusal == nil {
			t.Fatalf("300 cursors of 1 MiB each opened under a limit of %d MiB", limit>>20)
		}
		if code := lookup(t, refusal, "code").AsInt64(); code != codeExceededMemoryLimit {
			t.Fatalf("refused with %s, want code %d", refusal, codeExceededMemoryLimit)
		}
		if n < limit>>20 || n > limit/1_000_000 {
			t.Errorf("%d cursors of about 1 MiB opened under a limit of %d MiB", n, limit>>20)
		}
		t.Logf("%d cursors held before the refusal: %s", n, lookup(t, refusal, "errmsg").StringValue())
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
