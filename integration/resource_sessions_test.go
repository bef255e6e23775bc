package integration

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/lethedb/lethe/session"
)

// codeTooManyLogicalSessions is MongoDB's refusal of a session beyond
// maxSessions (error_codes.yml: TooManyLogicalSessions, 261).
const codeTooManyLogicalSessions = 261

// freshLsid is an lsid no one has named: a UUID from n.
func freshLsid(n int) bson.D {
	id := make([]byte, 16)
	id[0], id[1], id[2], id[3] = 0x5e, byte(n>>16), byte(n>>8), byte(n)
	id[6], id[8] = 0x40, 0x80 // version 4, RFC 4122 variant
	return bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: id}}}
}

// TestSessionFlood is issue 17's attack: one client sends pings with fresh
// lsids, a session each, as fast as it can (100,000 in 4 s filled the
// session table, and every new driver client then got 261 for 30 minutes).
// MongoDB keeps up to maxSessions (1,000,000; its
// logical_session_cache.idl) and refuses more with TooManyLogicalSessions;
// Lethe keeps as many, and refuses one client more than a tenth of them,
// so the attacker is refused itself and every other client goes on
// starting sessions.
func TestSessionFlood(t *testing.T) {
	const perClient = session.DefaultMaxPerClient
	ts := startServer(t)
	attacker := dialRawFrom(t, ts, "127.0.0.2")

	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		// The pings are pipelined, a window at a time, as a client bent on
		// filling the table would send them.
		const window = 500
		started, refused := 0, 0
		var refusal bson.Raw
		for sent := 0; sent < perClient+window; sent += window {
			for i := range window {
				attacker.send(attacker.msgFrame(bson.D{{Key: "ping", Value: 1}, {Key: "lsid", Value: freshLsid(sent + i)}, {Key: "$db", Value: "admin"}}))
			}
			for range window {
				reply := bson.Raw(attacker.receive().Msg.Body)
				if lookup(t, reply, "ok").AsFloat64() == 1 {
					started++
					continue
				}
				refused++
				refusal = reply
			}
		}
		if started != perClient || refused != window {
			t.Fatalf("the attacker started %d sessions and was refused %d, want %d and %d", started, refused, perClient, window)
		}
		if code := lookup(t, refusal, "code").AsInt64(); code != codeTooManyLogicalSessions {
			t.Fatalf("refused with %s, want code %d", refusal, codeTooManyLogicalSessions)
		}
		if msg := lookup(t, refusal, "errmsg").StringValue(); !strings.Contains(msg, "client 127.0.0.2 has too many active sessions") {
			t.Errorf("refusal %q does not name the client", msg)
		}
	})
	// A new driver client, which names a session in every command, is
	// served while the attacker's sessions live: from another address it
	// is another client.
	fresh := ts.NewClient(t)
	if err := fresh.Database("admin").RunCommand(testCtx(t), bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Errorf("a new client's ping after the flood: %v", err)
	}
	sess, err := fresh.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(testCtx(t))
	coll := fresh.Database("test").Collection("c")
	if _, err := coll.InsertOne(mongo.NewSessionContext(testCtx(t), sess), bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Errorf("a new client's insert in an explicit session after the flood: %v", err)
	}
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if n := lookup(t, status, "logicalSessionRecordCache", "activeSessionsCount").AsInt64(); n < perClient || n > perClient+10 {
		t.Errorf("%d sessions kept, want the attacker's %d and a few", n, perClient)
	}
	// The attacker's known sessions still work: it is refused only new ones.
	if reply := attacker.command(bson.D{{Key: "ping", Value: 1}, {Key: "lsid", Value: freshLsid(0)}, {Key: "$db", Value: "admin"}}); lookup(t, reply, "ok").AsFloat64() != 1 {
		t.Errorf("the attacker's first session: %s", reply)
	}
}
