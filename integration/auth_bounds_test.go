package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/lethedb/lethe/server"
)

// TestAuthBoundsPerUser: with access control a client is its user, not its
// address. A read-only user leaving cursors open on connection after
// connection, and minting session ids, meets its own bounds; another user
// on the same host still opens cursors and sessions. (The bounds are small
// here; TestCursorFlood and TestSessionFlood attack the defaults.)
func TestAuthBoundsPerUser(t *testing.T) {
	// Large enough that the attack lasts and the bystander's p99 means
	// something.
	const cursorsPerUser, sessionsPerUser = 500, 5_000
	ts := startServer(t, withAuth(), func(c *server.Config) {
		c.Cursors = server.CursorLimits{Total: 4 * cursorsPerUser, PerClient: cursorsPerUser}
		c.MaxSessions, c.MaxSessionsPerClient = 4*sessionsPerUser, sessionsPerUser
	})
	run(t, ts.Client.Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "adminpw"},
		{Key: "roles", Value: bson.A{"root"}}})
	root := authClient(t, ts, "admin", "adminpw", "admin", "")
	createUser(t, root, "app", "reader", bson.A{"read"})
	createUser(t, root, "app", "writer", bson.A{"readWrite"})
	mustInsert(t, root.Database("app").Collection("c"), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	writer := authClient(t, ts, "writer", "pw", "app", "")

	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		find := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "app"}}
		opened := 0
		var refusal bson.Raw
		for refusal == nil {
			c := authRaw(t, ts, "reader", "pw", "app")
			var n int
			n, refusal = openCursors(t, c, cursorsPerUser/2, find)
			opened += n
			c.Close()
		}
		if opened != cursorsPerUser {
			t.Errorf("the read-only user opened %d cursors, limit %d", opened, cursorsPerUser)
		}
		wantRefusal(t, refusal, fmt.Sprintf("user reader@app has %d open", cursorsPerUser))

		c := authRaw(t, ts, "reader", "pw", "app")
		started := 0
		for i := range sessionsPerUser + 1 {
			reply := c.command(bson.D{{Key: "ping", Value: 1}, {Key: "lsid", Value: freshLsid(i)}, {Key: "$db", Value: "admin"}})
			if lookup(t, reply, "ok").AsFloat64() != 1 {
				if code := lookup(t, reply, "code").AsInt64(); code != codeTooManyLogicalSessions ||
					!strings.Contains(lookup(t, reply, "errmsg").StringValue(), "user reader@app has too many") {
					t.Errorf("session %d refused with %s", i, reply)
				}
				break
			}
			started++
		}
		c.Close()
		if started != sessionsPerUser {
			t.Errorf("the read-only user started %d sessions, limit %d", started, sessionsPerUser)
		}

		// The other user, from the same address, is served.
		sess, err := writer.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		if n, err := readAll(mongo.NewSessionContext(ctx, sess), writer.Database("app").Collection("c")); err != nil || n != 2 {
			t.Errorf("the other user's multi-batch find in a session: %d documents, %v", n, err)
		}
	})
}
