package integration

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/server"
)

// testEpoch is where the manual clock of every test server starts.
var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// storeFlag runs every test's server on the store it names: pebble, or
// tikv-mock (client-go's mock of a TiKV cluster, one per server). Tests
// run as subtests of TestOnTiKVMock are on the mock whatever it says.
var storeFlag = flag.String("store", "pebble", "store of the test servers: pebble or tikv-mock")

// onTiKVMock reports whether t's server runs on the TiKV mock.
func onTiKVMock(t *testing.T) bool {
	return *storeFlag == "tikv-mock" || strings.HasPrefix(t.Name(), "TestOnTiKVMock/")
}

// testServer is a Lethe server running in the test process, with a manual
// clock and a store in a temporary directory (or on a TiKV mock cluster).
type testServer struct {
	URI    string
	Client *mongo.Client // connected to URI; replaced by Restart
	Clock  *clock.Manual
	Dir    string
	Srv    *server.Server
	// Logs holds the server's log entries at Info and above.
	Logs *observer.ObservedLogs

	cfg server.Config
	// mock is the TiKV mock cluster the server's store is on, which
	// outlives a Restart; nil on pebble.
	mock *tikvkv.MockCluster
}

// serverOption adjusts the configuration startServer uses.
type serverOption func(*server.Config)

func withMaxConns(n int) serverOption {
	return func(c *server.Config) { c.MaxConns = n }
}

// startServer starts a server on a free port of 127.0.0.1 and connects a
// client to it; both are shut down when the test ends. Set LETHE_TEST_LOG=1
// to see the server's debug log in the test output.
func startServer(t *testing.T, opts ...serverOption) *testServer {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	if os.Getenv("LETHE_TEST_LOG") != "" {
		core = zapcore.NewTee(core, zaptest.NewLogger(t, zaptest.Level(zapcore.DebugLevel)).Core())
	}
	ts := &testServer{Clock: clock.NewManual(testEpoch), Dir: t.TempDir(), Logs: logs}
	ts.cfg = server.Config{
		Listen:      "127.0.0.1:0",
		DataDir:     ts.Dir,
		Logger:      zap.New(core),
		Clock:       ts.Clock,
		ManualClock: true,
		CmdLine:     []string{"lethe", "--test"},
	}
	for _, o := range opts {
		o(&ts.cfg)
	}
	if onTiKVMock(t) {
		c, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ts.mock = c
	}
	ts.start(t)
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// Restart shuts the server down and starts it again on the same directory
// and clock, as after a process restart. The port changes: URI and Client
// are replaced.
func (ts *testServer) Restart(t *testing.T) {
	t.Helper()
	ts.stop(t)
	ts.start(t)
}

// NewClient connects a new client to the server, closed when the test ends.
// opts apply after the URI.
func (ts *testServer) NewClient(t *testing.T, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	// A heartbeat of 500 ms (the driver's least) bounds the awaitable hello
	// its monitor keeps waiting on the server: the Go driver's Disconnect
	// can wait for that hello to be answered, which would otherwise take
	// the default 10 s.
	base := options.Client().ApplyURI(ts.URI).SetServerSelectionTimeout(5 * time.Second).SetHeartbeatInterval(500 * time.Millisecond)
	all := append([]*options.ClientOptions{base}, opts...)
	client, err := mongo.Connect(all...)
	if err != nil {
		t.Fatalf("connect to %s: %v", ts.URI, err)
	}
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	return client
}

func (ts *testServer) start(t *testing.T) {
	t.Helper()
	if ts.mock != nil {
		// A front-end of its own on the cluster, as a restarted process
		// would open; the engine closes it when the server shuts down.
		store, err := ts.mock.Open(tikvkv.Options{Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		ts.cfg.Store = store
	}
	srv, err := server.New(ts.cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	if err := srv.Start(); err != nil {
		srv.Shutdown(context.Background())
		t.Fatalf("start server: %v", err)
	}
	ts.Srv = srv
	ts.URI = "mongodb://" + srv.Addr().String() + "/"
	ts.Client = ts.NewClient(t)
}

func (ts *testServer) stop(t *testing.T) {
	t.Helper()
	disconnect, cancelDisconnect := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelDisconnect()
	ts.Client.Disconnect(disconnect)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Srv.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// testCtx returns a context for one test step, bounded so that a hang fails the
// test instead of stalling the run.
func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
