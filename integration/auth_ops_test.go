package integration

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAuthOwnOps: with access control, currentOp {$ownOps: true} and
// $currentOp without allUsers show a user its own operations only, named
// by effectiveUsers; seeing everyone's needs inprog.
func TestAuthOwnOps(t *testing.T) {
	ts := startServer(t, withAuth(), withTestCommands())
	ctx := testCtx(t)
	run(t, ts.Client.Database("admin"), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "adminpw"},
		{Key: "roles", Value: bson.A{"root"}}})
	root := authClient(t, ts, "admin", "adminpw", "admin", "")
	createUser(t, root, "app", "a", bson.A{"readWrite"})
	createUser(t, root, "app", "b", bson.A{"readWrite"})
	run(t, root.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "alwaysOn"},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "blockConnection", Value: true},
			{Key: "blockTimeMS", Value: 1500}, {Key: "appName", Value: "slowA"}}}})
	a := ts.NewClient(t, options.Client().SetAppName("slowA").
		SetAuth(options.Credential{Username: "a", Password: "pw", AuthSource: "app"}))
	b := authClient(t, ts, "b", "pw", "app", "")
	if err := a.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- a.Database("app").Collection("c").FindOne(ctx, bson.D{}).Err() }()

	usersOf := func(reply bson.Raw) []string {
		var users []string
		ops, _ := reply.Lookup("inprog").Array().Values()
		for _, op := range ops {
			if u, ok := op.Document().Lookup("effectiveUsers", "0", "user").StringValueOK(); ok {
				users = append(users, u)
			}
		}
		return users
	}
	// root sees a's blocked find, named by its user.
	deadline := time.Now().Add(2 * time.Second)
	for !contains(usersOf(run(t, root.Database("admin"), bson.D{{Key: "currentOp", Value: 1}})), "a") {
		if time.Now().After(deadline) {
			t.Fatal("root's currentOp never showed a's find")
		}
	}
	// b sees only its own: the currentOp it runs.
	own := usersOf(run(t, b.Database("admin"), bson.D{{Key: "currentOp", Value: 1}, {Key: "$ownOps", Value: true}}))
	if len(own) == 0 || contains(own, "a") || contains(own, "admin") {
		t.Fatalf("b's currentOp $ownOps shows %v, want b's only", own)
	}
	docs := aggregateDB(t, b.Database("admin"), mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}})
	for _, d := range docs {
		if u, _ := d.Lookup("effectiveUsers", "0", "user").StringValueOK(); u != "b" {
			t.Fatalf("b's $currentOp shows an operation of %q: %v", u, d)
		}
	}
	if len(docs) == 0 {
		t.Fatal("b's $currentOp shows nothing, not even itself")
	}
	// Everyone's needs inprog.
	wantCode(t, b.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Err(), codeUnauthorized)
	_, err := b.Database("admin").Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: true}}}}})
	wantCode(t, err, codeUnauthorized)
	// Killing another user's operation needs killop; one's own does not.
	var opid int64
	ops, _ := run(t, root.Database("admin"), bson.D{{Key: "currentOp", Value: 1}}).Lookup("inprog").Array().Values()
	wantUID := sha256.Sum256([]byte("a@app"))
	for _, op := range ops {
		if u, _ := op.Document().Lookup("effectiveUsers", "0", "user").StringValueOK(); u == "a" {
			opid = op.Document().Lookup("opid").AsInt64()
			// Its session is a's: the uid is the digest of "a@app".
			if _, uid, ok := op.Document().Lookup("lsid", "uid").BinaryOK(); !ok || !bytes.Equal(uid, wantUID[:]) {
				t.Errorf("a's find shows lsid %v, want uid SHA-256(\"a@app\")", op.Document().Lookup("lsid"))
			}
		}
	}
	wantCode(t, b.Database("admin").RunCommand(ctx, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}}).Err(), codeUnauthorized)
	run(t, a.Database("admin"), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	run(t, root.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}})
	if err := <-blocked; errCode(err) != 11601 {
		t.Fatalf("a's killed find: %v, want Interrupted (11601)", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
