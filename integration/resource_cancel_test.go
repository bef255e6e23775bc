package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// slowCount is a count whose filter maps over an array of 30 for each of
// its elements, 900 additions a document: over slowDocs documents it
// runs for seconds unless stopped.
var slowCount = bson.D{{Key: "count", Value: "slow"}, {Key: "query", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{
	bson.D{{Key: "$size", Value: bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: "$a"}, {Key: "as", Value: "x"}, {Key: "in",
		Value: bson.D{{Key: "$size", Value: bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: "$a"}, {Key: "as", Value: "y"}, {Key: "in",
			Value: bson.D{{Key: "$add", Value: bson.A{"$$x", "$$y"}}}}}}}}}}}}}}}, 0}}}}}}, {Key: "$db", Value: "test"}}

const slowDocs = 20_000

func insertSlowDocs(t *testing.T, ts *testServer) {
	t.Helper()
	a := make(bson.A, 30)
	for i := range a {
		a[i] = i
	}
	docs := make([]any, slowDocs)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: a}}
	}
	mustInsert(t, ts.Client.Database("test").Collection("slow"), docs...)
}

// runningOps returns currentOp's entries for command name.
func runningOps(t *testing.T, ts *testServer, name string) []bson.Raw {
	t.Helper()
	reply := run(t, ts.Client.Database("admin"), bson.D{{Key: "currentOp", Value: 1}, {Key: "command." + name, Value: bson.D{{Key: "$exists", Value: true}}}})
	vals, _ := lookup(t, reply, "inprog").Array().Values()
	ops := make([]bson.Raw, len(vals))
	for i, v := range vals {
		ops[i] = v.Document()
	}
	return ops
}

// waitForOp waits for a command called name to show in currentOp and
// returns its opid.
func waitForOp(t *testing.T, ts *testServer, name string) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ops := runningOps(t, ts, name); len(ops) > 0 {
			return lookup(t, ops[0], "opid").AsInt64()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s in currentOp", name)
	return 0
}

// TestDisconnectStopsCommand: a client sends a command that would run for
// seconds and goes away; the command stops at once instead of running to
// its end for no one.
func TestDisconnectStopsCommand(t *testing.T) {
	ts := startServer(t)
	insertSlowDocs(t, ts)
	var stopped time.Duration
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		c := dialRaw(t, ts)
		c.send(c.msgFrame(slowCount))
		waitForOp(t, ts, "count")
		time.Sleep(50 * time.Millisecond) // past the moment the server starts watching
		c.Close()
		start := time.Now()
		for len(runningOps(t, ts, "count")) > 0 {
			if time.Since(start) > 2*time.Second {
				t.Fatalf("the count still runs %v after its client left", time.Since(start))
			}
			time.Sleep(5 * time.Millisecond)
		}
		stopped = time.Since(start)
	})
	t.Logf("the count stopped %v after its client left", stopped.Round(time.Millisecond))
	if n := ts.Logs.FilterMessage("client went away: stopping its command").Len(); n != 1 {
		t.Errorf("%d commands stopped for their client leaving, want 1", n)
	}
}

// TestKillOp: currentOp and $currentOp list a running command with its
// opid, killOp stops it and its client gets Interrupted (11601); killing an
// operation that has ended is not an error, as in MongoDB.
func TestKillOp(t *testing.T) {
	ts := startServer(t)
	insertSlowDocs(t, ts)
	victim := ts.NewClient(t)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- victim.Database("test").RunCommand(context.Background(), slowCount).Err()
	}()
	opid := waitForOp(t, ts, "count")

	agg, err := ts.Client.Database("admin").Aggregate(testCtx(t), mongo.Pipeline{
		{{Key: "$currentOp", Value: bson.D{}}}, {{Key: "$match", Value: bson.D{{Key: "opid", Value: opid}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []bson.M
	if err := agg.All(testCtx(t), &listed); err != nil || len(listed) != 1 || listed[0]["ns"] != "test.$cmd" {
		t.Errorf("$currentOp for opid %d: %v %v", opid, listed, err)
	}

	reply := run(t, ts.Client.Database("admin"), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	if info := lookup(t, reply, "info").StringValue(); info != "attempting to kill op" {
		t.Errorf("killOp reply %s", reply)
	}
	select {
	case err := <-done:
		wantCode(t, err, 11601)
		t.Logf("killed after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the killed count still runs after 5s")
	}
	// The victim's connection carries on.
	if err := victim.Ping(testCtx(t), nil); err != nil {
		t.Errorf("ping after the kill: %v", err)
	}
	run(t, ts.Client.Database("admin"), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	_, err = ts.Client.Database("admin").RunCommand(testCtx(t), bson.D{{Key: "killOp", Value: 1}}).Raw()
	wantCode(t, err, 40414)
	_, err = ts.Client.Database("test").RunCommand(testCtx(t), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}}).Raw()
	wantCode(t, err, 13)
}
