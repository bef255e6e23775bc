package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAuthFailuresSlowOnlyTheAttacker attacks the login throttle: repeated
// wrong passwords from one host are answered ever later, while an
// authenticated client of the same host is served as before.
func TestAuthFailuresSlowOnlyTheAttacker(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "u", bson.A{"readWrite"})
	mustInsert(t, root.Database("app").Collection("c"), bson.D{{Key: "_id", Value: 1}})
	good := authClient(t, ts, "u", "pw", "app", "SCRAM-SHA-256")
	if err := good.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}

	fail := func() time.Duration {
		t.Helper()
		start := time.Now()
		c := ts.NewClient(t, options.Client().SetMaxPoolSize(1).
			SetAuth(options.Credential{Username: "u", Password: "wrong", AuthSource: "app", AuthMechanism: "SCRAM-SHA-256"}))
		err := c.Ping(ctx, nil)
		if err == nil || !strings.Contains(err.Error(), "Authentication failed") {
			t.Fatalf("wrong password: %v", err)
		}
		c.Disconnect(ctx)
		return time.Since(start)
	}
	// Three free failures, then 100, 200 and 400 ms of delay: the next
	// attempt waits 800 ms.
	for range 6 {
		fail()
	}
	attempt := make(chan time.Duration, 1)
	go func() { attempt <- fail() }()

	// Meanwhile the authenticated client is served at once.
	served, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancel()
	for i := range 50 {
		if err := good.Database("app").Collection("c").FindOne(served, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
			t.Fatalf("find %d of the authenticated client during the attack: %v", i, err)
		}
	}
	if took := <-attempt; took < 800*time.Millisecond {
		t.Fatalf("the seventh failure was answered after %v, want at least 800ms", took)
	}
	status := run(t, root.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if n, _ := status.Lookup("security", "authentication", "mechanisms", "SCRAM-SHA-256", "authenticate", "failed").AsInt64OK(); n < 7 {
		t.Fatalf("serverStatus counts %d failures, want 7", n)
	}
}

// TestAuthMechanismFallbackIsNoFailure: a driver's speculative
// SCRAM-SHA-256 for a user with SCRAM-SHA-1 credentials only is
// negotiation: many such logins are neither logged as failures nor slow
// the host down.
func TestAuthMechanismFallbackIsNoFailure(t *testing.T) {
	ts, root := startAuthServer(t)
	ctx := testCtx(t)
	createUser(t, root, "app", "old", bson.A{"read"}, bson.E{Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}})
	for i := range 8 {
		c := authClient(t, ts, "old", "pw", "app", "")
		if err := c.Ping(ctx, nil); err != nil {
			t.Fatalf("login %d: %v", i, err)
		}
		c.Disconnect(ctx)
	}
	if n := len(ts.Logs.FilterMessage("authentication failed").All()); n != 0 {
		t.Fatalf("%d failures logged for logins that succeeded", n)
	}
	status := run(t, root.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if n, _ := status.Lookup("security", "authentication", "mechanisms", "SCRAM-SHA-256", "authenticate", "failed").AsInt64OK(); n != 0 {
		t.Fatalf("serverStatus counts %d SCRAM-SHA-256 failures", n)
	}
}
