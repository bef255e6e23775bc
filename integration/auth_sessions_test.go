package integration

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// With access control a session is its user's, as in MongoDB: its
// identity is its UUID and the SHA-256 of "user@db", so that another user
// naming the same UUID has a session of its own and can neither end, kill
// nor read from the first, nor replay its retryable writes. The commands
// go over raw connections, since drivers choose their sessions' UUIDs.

// authRaw opens a raw connection authenticated as user of db with
// SCRAM-SHA-256.
func authRaw(t *testing.T, ts *testServer, user, pwd, db string) *rawConn {
	t.Helper()
	client, err := scram.SHA256.NewClient(user, pwd, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	c := dialRaw(t, ts)
	msg, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	reply := c.command(bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte(msg)}}, {Key: "$db", Value: db}})
	for i := 0; ; i++ {
		if ok := reply.Lookup("ok").AsFloat64(); ok != 1 || i > 3 {
			t.Fatalf("authenticating %s@%s: %v", user, db, reply)
		}
		if reply.Lookup("done").Boolean() {
			break
		}
		_, payload := lookup(t, reply, "payload").Binary()
		msg = ""
		if !conv.Done() {
			if msg, err = conv.Step(string(payload)); err != nil {
				t.Fatalf("authenticating %s@%s: %v", user, db, err)
			}
		}
		reply = c.command(bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: lookup(t, reply, "conversationId")},
			{Key: "payload", Value: bson.Binary{Data: []byte(msg)}}, {Key: "$db", Value: db}})
	}
	return c
}

// rawCmd sends cmd to db and returns the reply.
func rawCmd(c *rawConn, db string, cmd ...bson.E) bson.Raw {
	c.t.Helper()
	return c.command(append(bson.D(cmd), bson.E{Key: "$db", Value: db}))
}

func wantOK(t *testing.T, reply bson.Raw, what string) {
	t.Helper()
	if reply.Lookup("ok").AsFloat64() != 1 {
		t.Fatalf("%s: %v", what, reply)
	}
}

func wantReplyCode(t *testing.T, reply bson.Raw, code int64, what string) {
	t.Helper()
	if reply.Lookup("ok").AsFloat64() != 0 || reply.Lookup("code").AsInt64() != code {
		t.Fatalf("%s: %v, want code %d", what, reply, code)
	}
}

// userUID is MongoDB's digest of a user: SHA-256 of "user@db".
func userUID(user, db string) []byte {
	h := sha256.Sum256([]byte(user + "@" + db))
	return h[:]
}

// listedSessions runs $listLocalSessions with spec on c and returns the
// sessions of the UUID id it lists, by their uid.
func listedSessions(t *testing.T, c *rawConn, spec bson.D, id []byte) map[string]bson.Raw {
	t.Helper()
	reply := rawCmd(c, "admin", bson.E{Key: "aggregate", Value: 1}, bson.E{Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: spec}}}},
		bson.E{Key: "cursor", Value: bson.D{}})
	wantOK(t, reply, "$listLocalSessions")
	docs, err := lookup(t, reply, "cursor", "firstBatch").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bson.Raw{}
	for _, v := range docs {
		d := v.Document()
		if _, got := lookup(t, d, "_id", "id").Binary(); string(got) != string(id) {
			continue
		}
		_, uid := lookup(t, d, "_id", "uid").Binary()
		out[string(uid)] = d
	}
	return out
}

// twoUsersAndDocs creates the readWrite users a and b of app (password
// "pw") and n documents in app.c, _id 0 to n-1.
func twoUsersAndDocs(t *testing.T, root *mongo.Client, n int) {
	t.Helper()
	createUser(t, root, "app", "a", bson.A{"readWrite"})
	createUser(t, root, "app", "b", bson.A{"readWrite"})
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	if _, err := root.Database("app").Collection("c").InsertMany(testCtx(t), docs); err != nil {
		t.Fatal(err)
	}
}

func TestAuthSessionsBelongToTheirUser(t *testing.T) {
	ts := startServer(t, withAuth(), withReplSet("rs0"))
	run(t, ts.Client.Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "adminpw"},
		{Key: "roles", Value: bson.A{"root"}}})
	root := authClient(t, ts, "admin", "adminpw", "admin", "")
	twoUsersAndDocs(t, root, 10)
	a := authRaw(t, ts, "a", "pw", "app")
	b := authRaw(t, ts, "b", "pw", "app")
	rootRaw := authRaw(t, ts, "admin", "adminpw", "admin")
	uuid := []byte("0123456789abcdef")
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: uuid}}}
	uidA, uidB := userUID("a", "app"), userUID("b", "app")

	// A opens a cursor in its session.
	reply := rawCmd(a, "app", bson.E{Key: "find", Value: "c"}, bson.E{Key: "batchSize", Value: 2}, bson.E{Key: "lsid", Value: lsid})
	wantOK(t, reply, "a's find")
	cursorID := lookup(t, reply, "cursor", "id").Int64()
	getMore := func(c *rawConn, lsid bson.D) bson.Raw {
		t.Helper()
		return rawCmd(c, "app", bson.E{Key: "getMore", Value: cursorID}, bson.E{Key: "collection", Value: "c"},
			bson.E{Key: "batchSize", Value: 1}, bson.E{Key: "lsid", Value: lsid})
	}

	// B naming A's UUID ends and kills its own session of that UUID, not
	// A's; B's getMore on A's cursor is refused.
	wantOK(t, rawCmd(b, "admin", bson.E{Key: "endSessions", Value: bson.A{lsid}}), "b's endSessions")
	wantOK(t, rawCmd(b, "admin", bson.E{Key: "killSessions", Value: bson.A{lsid}}), "b's killSessions")
	wantOK(t, rawCmd(b, "admin", bson.E{Key: "killSessions", Value: bson.A{}}), "b's killSessions of all its own")
	wantReplyCode(t, getMore(b, lsid), codeUnauthorized, "b's getMore on a's cursor")
	wantOK(t, getMore(a, lsid), "a's getMore after b's kills")

	// Naming A's digest is impersonating A, which B may not do.
	spoofed := append(lsid, bson.E{Key: "uid", Value: bson.Binary{Data: uidA}})
	wantReplyCode(t, getMore(b, spoofed), codeUnauthorized, "b's getMore in a's session by its uid")
	wantReplyCode(t, rawCmd(b, "admin", bson.E{Key: "endSessions", Value: bson.A{spoofed}}), codeUnauthorized, "b's endSessions of a's uid")
	wantReplyCode(t, rawCmd(b, "admin", bson.E{Key: "killSessions", Value: bson.A{spoofed}}), codeUnauthorized, "b's killSessions of a's uid")
	wantOK(t, getMore(a, spoofed), "a's getMore naming its own uid")

	// A getMore in another session names the cursor's session with A's
	// digest.
	other := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("fedcba9876543210")}}}
	reply = getMore(a, other)
	wantReplyCode(t, reply, 50738, "a's getMore in another session")
	if msg := reply.Lookup("errmsg").StringValue(); !strings.Contains(msg, base64.StdEncoding.EncodeToString(uidA)) {
		t.Errorf("message %q does not name a's digest", msg)
	}

	// Each user lists its own session of the UUID, with its digest and
	// name; root lists both with allUsers, and B may not list A's.
	for _, c := range []struct {
		conn     *rawConn
		uid      []byte
		name     string
		otherUID []byte
	}{{a, uidA, "a@app", uidB}, {b, uidB, "b@app", uidA}} {
		listed := listedSessions(t, c.conn, bson.D{}, uuid)
		mine, ok := listed[string(c.uid)]
		if len(listed) != 1 || !ok {
			t.Fatalf("%s lists %d sessions of the UUID (its own: %v), want only its own", c.name, len(listed), ok)
		}
		if name := lookup(t, mine, "user", "name").StringValue(); name != c.name {
			t.Errorf("%s's session shows user %q", c.name, name)
		}
	}
	if all := listedSessions(t, rootRaw, bson.D{{Key: "allUsers", Value: true}}, uuid); all[string(uidA)] == nil || all[string(uidB)] == nil || len(all) != 2 {
		t.Errorf("root with allUsers lists %d sessions of the UUID, want a's and b's", len(all))
	}
	if some := listedSessions(t, rootRaw, bson.D{{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "a"}, {Key: "db", Value: "app"}}}}}, uuid); len(some) != 1 || some[string(uidA)] == nil {
		t.Errorf("root listing a's sessions lists %d of the UUID, want a's only", len(some))
	}
	wantReplyCode(t, rawCmd(b, "admin", bson.E{Key: "aggregate", Value: 1}, bson.E{Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{
		{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "a"}, {Key: "db", Value: "app"}}}}}}}}}, bson.E{Key: "cursor", Value: bson.D{}}),
		codeUnauthorized, "b listing a's sessions")

	// A retryable write by B in its session of the UUID runs as B's own,
	// though A's session has a record of the same txnNumber.
	insert := func(c *rawConn, id string) bson.Raw {
		t.Helper()
		return rawCmd(c, "app", bson.E{Key: "insert", Value: "r"}, bson.E{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
			bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: int64(1)})
	}
	for _, w := range []struct {
		conn *rawConn
		id   string
	}{{a, "by a"}, {b, "by b"}, {a, "by a again"}, {b, "by b again"}} {
		reply := insert(w.conn, w.id)
		wantOK(t, reply, "insert "+w.id)
		if n := lookup(t, reply, "n").AsInt64(); n != 1 || reply.Lookup("writeErrors").Type != 0 {
			t.Fatalf("insert %s: %v", w.id, reply)
		}
	}
	r := root.Database("app").Collection("r")
	for id, want := range map[string]int64{"by a": 1, "by b": 1, "by a again": 0, "by b again": 0} {
		if n := count(t, r, bson.D{{Key: "_id", Value: id}}); n != want {
			t.Errorf("%d documents inserted %s, want %d", n, id, want)
		}
	}

	// Their oplog entries name each user's session, {id, uid}.
	oplog := root.Database("local").Collection("oplog.rs")
	for id, uid := range map[string][]byte{"by a": uidA, "by b": uidB} {
		filter := bson.D{{Key: "o._id", Value: id}, {Key: "lsid", Value: bson.D{
			{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: uuid}}, {Key: "uid", Value: bson.Binary{Data: uid}}}}}
		if n := count(t, oplog, filter); n != 1 {
			t.Errorf("%d oplog entries of the insert %s in its user's session, want 1", n, id)
		}
	}

	// killAllSessions and killAllSessionsByPattern match users by digest:
	// killing B's sessions leaves A's cursor open, killing A's closes it.
	wantOK(t, rawCmd(rootRaw, "admin", bson.E{Key: "killAllSessions", Value: bson.A{bson.D{{Key: "user", Value: "b"}, {Key: "db", Value: "app"}}}}), "killAllSessions of b")
	wantOK(t, rawCmd(rootRaw, "admin", bson.E{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "uid", Value: bson.Binary{Data: uidB}}}}}), "killAllSessionsByPattern of b")
	wantOK(t, getMore(a, lsid), "a's getMore after b's sessions were killed")
	wantOK(t, rawCmd(rootRaw, "admin", bson.E{Key: "killAllSessionsByPattern", Value: bson.A{bson.D{{Key: "lsid", Value: bson.D{
		{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: uuid}}, {Key: "uid", Value: bson.Binary{Data: uidA}}}}}}}), "killAllSessionsByPattern of a's session")
	wantReplyCode(t, getMore(a, lsid), 43, "a's getMore after its session was killed")
}

// A user's killSessions with no list kills its own sessions only; a
// client that has not authenticated cannot name sessions to end.
func TestAuthKillSessionsOwnOnly(t *testing.T) {
	ts, root := startAuthServer(t)
	twoUsersAndDocs(t, root, 6)
	a := authRaw(t, ts, "a", "pw", "app")
	b := authRaw(t, ts, "b", "pw", "app")
	open := func(c *rawConn, uuid string) (int64, bson.D) {
		t.Helper()
		lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte(uuid)}}}
		reply := rawCmd(c, "app", bson.E{Key: "find", Value: "c"}, bson.E{Key: "batchSize", Value: 1}, bson.E{Key: "lsid", Value: lsid})
		wantOK(t, reply, "find")
		return lookup(t, reply, "cursor", "id").Int64(), lsid
	}
	getMore := func(c *rawConn, id int64, lsid bson.D) bson.Raw {
		t.Helper()
		return rawCmd(c, "app", bson.E{Key: "getMore", Value: id}, bson.E{Key: "collection", Value: "c"},
			bson.E{Key: "batchSize", Value: 1}, bson.E{Key: "lsid", Value: lsid})
	}
	curA, lsidA := open(a, "aaaaaaaaaaaaaaaa")
	curB, lsidB := open(b, "bbbbbbbbbbbbbbbb")
	wantOK(t, rawCmd(b, "admin", bson.E{Key: "killSessions", Value: bson.A{}}), "b's killSessions")
	wantReplyCode(t, getMore(b, curB, lsidB), 43, "b's getMore after killing its sessions")
	wantOK(t, getMore(a, curA, lsidA), "a's getMore after b killed its own sessions")
	anon := dialRaw(t, ts)
	wantReplyCode(t, rawCmd(anon, "admin", bson.E{Key: "endSessions", Value: bson.A{lsidA}}), codeUnauthorized, "endSessions unauthenticated")
	wantOK(t, rawCmd(anon, "admin", bson.E{Key: "endSessions", Value: bson.A{}}), "endSessions of none unauthenticated")
	wantOK(t, getMore(a, curA, lsidA), "a's getMore after the unauthenticated endSessions")
}
