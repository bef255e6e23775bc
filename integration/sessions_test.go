package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
)

func withSessionTimeout(d time.Duration) serverOption {
	return func(c *server.Config) { c.SessionTimeout = d }
}

// openSessionCursor inserts n documents into app.c and opens a find
// cursor over them in a new session, reading batches of two; the cursor's
// first batch is consumed.
func openSessionCursor(t *testing.T, client *mongo.Client, n int) (*mongo.Cursor, *mongo.Session, *mongo.Collection) {
	t.Helper()
	ctx := testCtx(t)
	coll := client.Database("app").Collection("c")
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(ctx) })
	sctx := mongo.NewSessionContext(ctx, sess)
	cur, err := coll.Find(sctx, bson.D{}, options.Find().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cur.Close(ctx) })
	for i := 0; i < 2; i++ {
		if !cur.Next(sctx) {
			t.Fatalf("first batch: %v", cur.Err())
		}
	}
	if cur.ID() == 0 {
		t.Fatal("the cursor is exhausted after its first batch")
	}
	return cur, sess, coll
}

// startSession answers MongoDB's {id: {id: UUID}, timeoutMinutes}, and the
// session commands check their arguments as MongoDB's parsers do.
func TestSessionCommands(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("admin")
	reply := run(t, db, bson.D{{Key: "startSession", Value: 1}})
	subtype, id := lookup(t, reply, "id", "id").Binary()
	if subtype != bson.TypeBinaryUUID || len(id) != 16 || id[6]>>4 != 4 {
		t.Errorf("id %x (subtype %d), want a version 4 UUID", id, subtype)
	}
	if m := lookup(t, reply, "timeoutMinutes"); m.Type != bson.TypeInt32 || m.Int32() != 30 {
		t.Errorf("timeoutMinutes %v, want int 30", m)
	}
	hello := run(t, db, bson.D{{Key: "hello", Value: 1}})
	if m := lookup(t, hello, "logicalSessionTimeoutMinutes").Int32(); m != 30 {
		t.Errorf("logicalSessionTimeoutMinutes %d", m)
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id}}}
	for _, name := range []string{"refreshSessions", "killSessions", "endSessions"} {
		run(t, db, bson.D{{Key: name, Value: bson.A{lsid}}})
	}
	run(t, db, bson.D{{Key: "killAllSessions", Value: bson.A{}}})
	run(t, db, bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{}}}})

	uuid := bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id}
	ctx := testCtx(t)
	for _, c := range []struct {
		cmd  bson.D
		code int
	}{
		{bson.D{{Key: "endSessions", Value: 1}}, 14},
		{bson.D{{Key: "endSessions", Value: bson.A{1}}}, 14},
		{bson.D{{Key: "endSessions", Value: bson.A{bson.D{}}}}, 40414},
		{bson.D{{Key: "endSessions", Value: bson.A{bson.D{{Key: "id", Value: "x"}}}}}, 14},
		{bson.D{{Key: "endSessions", Value: bson.A{bson.D{{Key: "id", Value: bson.Binary{Data: id}}}}}}, 14},
		{bson.D{{Key: "endSessions", Value: bson.A{bson.D{{Key: "id", Value: uuid}, {Key: "x", Value: 1}}}}}, 40415},
		{bson.D{{Key: "endSessions", Value: bson.A{bson.D{{Key: "id", Value: uuid}, {Key: "txnNumber", Value: int64(1)}}}}}, 72},
		{bson.D{{Key: "endSessions", Value: bson.A{}}, {Key: "extra", Value: 1}}, 40415},
		{bson.D{{Key: "refreshSessions", Value: bson.A{bson.D{{Key: "id", Value: uuid}, {Key: "uid", Value: bson.Binary{Data: []byte{1}}}}}}}, 2},
		{bson.D{{Key: "killSessions", Value: "x"}}, 14},
		{bson.D{{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: "u"}}}}}, 40414},
		{bson.D{{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: 1}, {Key: "db", Value: "d"}}}}}, 14},
		{bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "lsid", Value: lsid}}}}}, 40414},
		{bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "bogus", Value: 1}}}}}, 40415},
	} {
		err := db.RunCommand(ctx, c.cmd).Err()
		if got := errCode(err); got != c.code {
			t.Errorf("%v: %v (code %d), want code %d", c.cmd, err, got, c.code)
		}
	}
}

// Ending or killing a session closes the cursors opened in it: the next
// getMore fails with CursorNotFound. Cursors outside the session live on.
func TestSessionEndClosesItsCursors(t *testing.T) {
	ts := startServer(t)
	other := ts.NewClient(t).Database("admin")
	for _, kill := range []func(lsid bson.Raw) bson.D{
		func(lsid bson.Raw) bson.D { return bson.D{{Key: "endSessions", Value: bson.A{lsid}}} },
		func(lsid bson.Raw) bson.D { return bson.D{{Key: "killSessions", Value: bson.A{lsid}}} },
		func(bson.Raw) bson.D { return bson.D{{Key: "killAllSessions", Value: bson.A{}}} },
		func(lsid bson.Raw) bson.D {
			return bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "lsid", Value: bson.D{
				{Key: "id", Value: lsid.Lookup("id")},
				{Key: "uid", Value: bson.Binary{Data: emptyUserDigest()}},
			}}}}}}
		},
	} {
		ctx := testCtx(t)
		ts.Client.Database("app").Collection("c").Drop(ctx)
		cur, sess, coll := openSessionCursor(t, ts.Client, 10)
		// A cursor without a session, opened on a raw connection (the
		// driver gives every command a session).
		raw := dialRaw(t, ts)
		outside := raw.command(bson.D{{Key: "find", Value: coll.Name()}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "app"}})
		outsideID := lookup(t, outside, "cursor", "id").Int64()
		cmd := kill(sess.ID())
		run(t, other, cmd)
		sctx := mongo.NewSessionContext(ctx, sess)
		if cur.Next(sctx) {
			t.Fatalf("%s: the cursor goes on after its session ended", cmd[0].Key)
		}
		wantCode(t, cur.Err(), 43)
		more := raw.command(bson.D{{Key: "getMore", Value: outsideID}, {Key: "collection", Value: "c"}, {Key: "$db", Value: "app"}})
		if ok := lookup(t, more, "ok").AsFloat64(); ok != 1 {
			t.Errorf("%s: the cursor outside the session: %v", cmd[0].Key, more)
		}
	}
}

func emptyUserDigest() []byte {
	// SHA-256 of nothing.
	return []byte{0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
		0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55}
}

// A session unused for the session timeout ends and its cursors close,
// while one whose cursor is read within the timeout lives on: each getMore
// is a use of the session. The timeout follows the server's clock.
func TestSessionTimeoutClosesCursors(t *testing.T) {
	ts := startServer(t, withSessionTimeout(time.Minute))
	ctx := testCtx(t)
	hello := run(t, ts.Client.Database("admin"), bson.D{{Key: "hello", Value: 1}})
	if m := lookup(t, hello, "logicalSessionTimeoutMinutes").Int32(); m != 1 {
		t.Fatalf("logicalSessionTimeoutMinutes %d, want 1", m)
	}
	param := run(t, ts.Client.Database("admin"), bson.D{{Key: "getParameter", Value: 1}, {Key: "localLogicalSessionTimeoutMinutes", Value: 1}})
	if m := lookup(t, param, "localLogicalSessionTimeoutMinutes").AsInt64(); m != 1 {
		t.Errorf("localLogicalSessionTimeoutMinutes %d, want 1", m)
	}
	err := ts.Client.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "localLogicalSessionTimeoutMinutes", Value: 5}}).Err()
	if err == nil {
		t.Error("setParameter changed the session timeout at run time")
	}
	cur, sess, _ := openSessionCursor(t, ts.Client, 20)
	sctx := mongo.NewSessionContext(ctx, sess)
	// Read a batch every 50 s for 150 s: the session never idles a minute.
	for i := 0; i < 3; i++ {
		ts.Clock.Advance(50 * time.Second)
		for j := 0; j < 2; j++ {
			if !cur.Next(sctx) {
				t.Fatalf("round %d: %v", i, cur.Err())
			}
		}
	}
	_, want := sess.ID().Lookup("id").Binary()
	if !sessionListed(t, ts, want) {
		t.Fatal("the session in use is not listed")
	}
	ts.Clock.Advance(61 * time.Second)
	if sessionListed(t, ts, want) {
		t.Error("the idle session is still listed after the timeout")
	}
	if cur.Next(sctx) {
		t.Fatal("the cursor outlived its session")
	}
	wantCode(t, cur.Err(), 43)
}

// The background sweep ends a session no command names any more once the
// timeout passes on the server's clock, and closes its cursors.
func TestSessionSweepClosesCursors(t *testing.T) {
	ts := startServer(t, withSessionTimeout(time.Minute))
	openSessionCursor(t, ts.Client, 10)
	raw := dialRaw(t, ts) // no lsid: serverStatus uses no session
	status := func() (cursors, sessions int64) {
		s := raw.command(bson.D{{Key: "serverStatus", Value: 1}, {Key: "$db", Value: "admin"}})
		return lookup(t, s, "metrics", "cursor", "open", "total").AsInt64(),
			lookup(t, s, "logicalSessionRecordCache", "activeSessionsCount").AsInt64()
	}
	if cursors, sessions := status(); cursors != 1 || sessions == 0 {
		t.Fatalf("%d cursors and %d sessions open, want 1 and some", cursors, sessions)
	}
	ts.Clock.Advance(61 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		cursors, sessions := status()
		if cursors == 0 && sessions == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the timeout: %d cursors and %d sessions open, want none", cursors, sessions)
		}
	}
}

func sessionListed(t *testing.T, ts *testServer, id []byte) bool {
	t.Helper()
	// A client of its own, whose implicit session is not the one sought.
	db := ts.NewClient(t).Database("admin")
	for _, d := range aggregateDB(t, db, mongo.Pipeline{{{Key: "$listLocalSessions", Value: bson.D{}}}}) {
		if _, got := d.Lookup("_id", "id").Binary(); string(got) == string(id) {
			return true
		}
	}
	return false
}

// killSessions interrupts a running command of the session, as MongoDB
// does; the killing command's own session is not killed.
func TestKillSessionsInterruptsItsCommand(t *testing.T) {
	ts := startServer(t, withTestCommands())
	ctx := testCtx(t)
	setFailPoint(t, ts, bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "blockConnection", Value: true},
		{Key: "blockTimeMS", Value: 20000}, {Key: "appName", Value: "blocked"}}, "alwaysOn")
	blocked := ts.NewClient(t, options.Client().SetAppName("blocked"))
	sess, err := blocked.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	done := make(chan error, 1)
	go func() {
		done <- blocked.Database("admin").RunCommand(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "ping", Value: 1}}).Err()
	}()
	// Wait until the ping runs, as currentOp shows it.
	admin := ts.Client.Database("admin")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the ping does not show in currentOp")
		}
		reply := run(t, admin, bson.D{{Key: "currentOp", Value: 1}, {Key: "command.ping", Value: 1}})
		if arr, _ := reply.Lookup("inprog").Array().Values(); len(arr) > 0 {
			_, id := arr[0].Document().Lookup("lsid", "id").Binary()
			if _, want := sess.ID().Lookup("id").Binary(); string(id) != string(want) {
				t.Errorf("currentOp shows lsid %x, want %x", id, want)
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the ping ended before it was killed: %v", err)
		default:
		}
	}
	run(t, admin, bson.D{{Key: "killSessions", Value: bson.A{sess.ID()}}})
	select {
	case err := <-done:
		wantCode(t, err, 11601)
	case <-time.After(10 * time.Second):
		t.Fatal("the ping was not interrupted")
	}
}

// Kill commands that name another user's sessions kill nothing here: every
// session is the unauthenticated user's.
func TestKillOtherUsersSessionsKillsNothing(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	cur, sess, _ := openSessionCursor(t, ts.Client, 10)
	admin := ts.NewClient(t).Database("admin")
	other := make([]byte, 32)
	other[0] = 1
	run(t, admin, bson.D{{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: "u"}, {Key: "db", Value: "admin"}}}}})
	run(t, admin, bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "uid", Value: bson.Binary{Data: other}}}}}})
	run(t, admin, bson.D{{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "lsid", Value: bson.D{
		{Key: "id", Value: sess.ID().Lookup("id")}, {Key: "uid", Value: bson.Binary{Data: other}}}}}}}})
	sctx := mongo.NewSessionContext(ctx, sess)
	for i := 2; i < 10; i++ {
		if !cur.Next(sctx) {
			t.Fatalf("document %d: %v", i, cur.Err())
		}
	}
}
