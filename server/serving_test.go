package server

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap"
)

// The TTL reaper yields while the server serves commands (engine
// Options.Foreground): the count of commands running includes a command
// while it runs, drops back once it has answered, also after a panic, and
// leaves out a monitor's hello waiting for a topology change, which may
// wait ten seconds at a time for good.
func TestServingCountsRunningCommands(t *testing.T) {
	// The handler learns its server through a channel: it is made before
	// the server is.
	srv := make(chan *Server, 1)
	var during []int64
	s, monitored, _ := startTestServer(t,
		commandDef{name: "letheServing", handle: func(context.Context, *Request) (bson.Raw, error) {
			s := <-srv
			srv <- s
			during = append(during, s.foreground.running.Load())
			return bson.Marshal(bson.D{{Key: "ok", Value: 1}})
		}},
		commandDef{name: "lethePanicServing", handle: func(context.Context, *Request) (bson.Raw, error) {
			panic("a bug")
		}})
	srv <- s
	// A client whose monitor sends one hello when it connects and no other
	// for the test's length: a streaming monitor's hello is, between its
	// waits, a command running now and then.
	monitored.Disconnect(context.Background())
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr().String()).SetDirect(true).
		SetServerMonitoringMode(options.ServerMonitoringModePoll).SetHeartbeatInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	ctx := context.Background()
	db := client.Database("admin")
	if err := db.RunCommand(ctx, bson.D{{Key: "letheServing", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	_ = db.RunCommand(ctx, bson.D{{Key: "lethePanicServing", Value: 1}}).Err()
	if n := s.foreground.running.Load(); n != 0 {
		t.Fatalf("%d commands counted as running after their replies", n)
	}

	// A monitor's hello that waits for a topology change, on a connection
	// of its own.
	hello, err := db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	tv := hello.Lookup("topologyVersion").Document()
	waiter, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr().String()).SetDirect(true))
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Disconnect(ctx)
	waited := make(chan error, 1)
	go func() {
		waited <- waiter.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: 2000}}).Err()
	}()
	for deadline := time.Now().Add(5 * time.Second); s.topo.awaiting.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the hello never waited for a topology change")
		}
		time.Sleep(time.Millisecond)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "letheServing", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if len(during) != 2 || during[0] != 1 || during[1] != 1 {
		t.Fatalf("a command saw %v commands running, want itself alone both times", during)
	}
	if n := s.foreground.running.Load(); n != 0 {
		t.Fatalf("%d commands counted as running after the hello answered", n)
	}
}

// The reaper looks once per batch: a command that began and ended between
// two looks still counts at the second, once.
func TestForegroundBusySinceLastLook(t *testing.T) {
	var f foreground
	if f.busy() {
		t.Fatal("busy before any command")
	}
	f.begin()
	if !f.busy() || !f.busy() {
		t.Fatal("not busy while a command runs")
	}
	f.end()
	if f.busy() {
		t.Fatal("busy after the command that the last look saw ended")
	}
	f.begin()
	f.end()
	if !f.busy() {
		t.Fatal("a command between two looks went unseen")
	}
	if f.busy() {
		t.Fatal("one command seen twice")
	}
}

// A change stream's getMore waits for events a second at a time, for as
// long as the stream is open: while it waits it is no command for the
// reaper to yield to, or a server with a stream open would purge at half
// speed for good. Once events come, it is one again.
func TestWaitingChangeStreamIsNotBusy(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: zap.NewNop(), ReplSet: "rs0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr().String()).SetDirect(true).
		SetServerMonitoringMode(options.ServerMonitoringModePoll).SetHeartbeatInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("test").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	started := s.foreground.started.Load()
	got := make(chan bool, 1)
	go func() { got <- cs.Next(ctx) }()
	// The getMore has started once it is counted; it waits once the
	// running count is back to none while Next has not returned.
	for deadline := time.Now().Add(5 * time.Second); s.foreground.started.Load() == started || s.foreground.running.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the getMore never stopped counting as running (running %d)", s.foreground.running.Load())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-got:
		t.Fatal("the stream's Next returned before any event")
	default:
	}
	s.foreground.busy() // the look that sees the getMore start
	if s.foreground.busy() {
		t.Fatal("a getMore waiting for events counted as busy")
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if !<-got {
		t.Fatalf("no event: %v", cs.Err())
	}
	if n := s.foreground.running.Load(); n != 0 {
		t.Fatalf("%d commands counted as running after the getMore answered", n)
	}
}
