package server

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lethedb/lethe/command"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// startTestServer starts a server with extra commands registered beside the
// real ones, and a client connected to it.
func startTestServer(t testing.TB, extra ...commandDef) (*Server, *mongo.Client, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	s, err := New(Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range extra {
		s.commands[extra[i].name] = &extra[i]
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + s.Addr().String()).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Disconnect(context.Background()) })
	return s, client, logs
}

func TestHandlerPanic(t *testing.T) {
	_, client, logs := startTestServer(t, commandDef{name: "lethePanic", handle: func(context.Context, *Request) (bson.Raw, error) {
		var m map[string]int
		m["boom"]++ // a nil map write: a bug, not an error
		return nil, nil
	}})
	db := client.Database("test")
	err := db.RunCommand(context.Background(), bson.D{{Key: "lethePanic", Value: 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 1 || ce.Name != "InternalError" {
		t.Fatalf("got %v, want InternalError", err)
	}
	entries := logs.FilterMessage("command panicked").All()
	if len(entries) != 1 || entries[0].Level != zapcore.ErrorLevel || entries[0].ContextMap()["stack"] == "" {
		t.Fatalf("panic log entries: %+v", entries)
	}
	// The same connection, and the server, go on.
	if err := db.RunCommand(context.Background(), bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatalf("ping after the panic: %v", err)
	}
}

// TestGracefulShutdown checks that Shutdown stops accepting connections at
// once but lets a request in flight finish and answers it.
func TestGracefulShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, client, _ := startTestServer(t, commandDef{name: "letheBlock", handle: func(_ context.Context, req *Request) (bson.Raw, error) {
		close(entered)
		<-release
		return command.OK(bson.E{Key: "finished", Value: true})
	}})
	addr := s.Addr().String()

	result := make(chan error, 1)
	go func() {
		raw, err := client.Database("test").RunCommand(context.Background(), bson.D{{Key: "letheBlock", Value: 1}}).Raw()
		if err == nil && !raw.Lookup("finished").Boolean() {
			err = errors.New("reply lacks finished: true")
		}
		result <- err
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(context.Background()) }()

	deadline := time.Now().Add(5 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the listener is closed
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting connections during shutdown")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned (%v) with a request in flight", err)
	case <-time.After(50 * time.Millisecond):
	}

	close(release)
	if err := <-result; err != nil {
		t.Fatalf("the request in flight: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestShutdownTimeout checks that Shutdown gives up on a request that
// outlives its context: the handler's context is canceled, and Shutdown
// reports the timeout.
func TestShutdownTimeout(t *testing.T) {
	entered, canceled := make(chan struct{}), make(chan struct{})
	s, client, _ := startTestServer(t, commandDef{name: "letheHang", handle: func(ctx context.Context, req *Request) (bson.Raw, error) {
		close(entered)
		<-ctx.Done()
		close(canceled)
		return nil, ctx.Err()
	}})
	go client.Database("test").RunCommand(context.Background(), bson.D{{Key: "letheHang", Value: 1}})
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want a deadline error", err)
	}
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not canceled")
	}
}

func TestMaxTimeMS(t *testing.T) {
	_, client, _ := startTestServer(t, commandDef{name: "letheSlow", handle: func(ctx context.Context, req *Request) (bson.Raw, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	err := client.Database("test").RunCommand(context.Background(), bson.D{{Key: "letheSlow", Value: 1}, {Key: "maxTimeMS", Value: 20}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 50 || ce.Name != "MaxTimeMSExpired" {
		t.Fatalf("got %v, want MaxTimeMSExpired", err)
	}
}
