package main

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/zap"
)

func TestParseStore(t *testing.T) {
	for _, c := range []struct{ store, pd, want string }{
		{"pebble", "", "pebble []"},
		{"tikv-mock", "", "tikv-mock []"},
		{"tikv", "pd1:2379", "tikv [pd1:2379]"},
		{"tikv", "pd1:2379, 10.0.0.2:2379", "tikv [pd1:2379 10.0.0.2:2379]"},
	} {
		spec, err := parseStore(c.store, c.pd)
		if got := fmt.Sprint(spec.kind, " ", spec.pd); err != nil || got != c.want {
			t.Errorf("parseStore(%q, %q) = %s, %v; want %s", c.store, c.pd, got, err, c.want)
		}
	}
	for _, c := range [][2]string{{"", ""}, {"tikv", ""}, {"tikv", "pd1"}, {"tikv", "pd1:2379,"}, {"badger", ""}, {"pebble", "pd1:2379"}, {"tikv-mock", "pd1:2379"}, {"tikv://pd1:2379", ""}} {
		if _, err := parseStore(c[0], c[1]); err == nil {
			t.Errorf("parseStore(%q, %q) accepted", c[0], c[1])
		}
	}
}

// TestOpenMockStore: --store tikv-mock opens a store of its own, which
// takes writes; pebble is left to the engine.
func TestOpenMockStore(t *testing.T) {
	s, err := storeSpec{kind: "pebble"}.open("lethe/", zap.NewNop())
	if s != nil || err != nil {
		t.Fatalf("pebble: %v, %v; want nil, nil", s, err)
	}
	s, err = storeSpec{kind: "tikv-mock"}.open("lethe/", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Now(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLifecycleOnTiKVMock runs the binary with --store tikv-mock: it
// serves writes and reads without touching --data-dir, and exits cleanly
// on SIGTERM.
func TestLifecycleOnTiKVMock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	proc := startBinary(t, dir, "--listen", "127.0.0.1:0", "--store", "tikv-mock", "--data-dir", data)
	if got := proc.waitLog("starting lethe")["store"]; got != "tikv-mock" {
		t.Errorf("logged store %v", got)
	}
	addr := proc.waitLog("lethe listening")["addr"].(string)
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	coll := client.Database("db").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "on the mock"}}); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got["x"] != "on the mock" {
		t.Fatalf("find: %v, %v", got, err)
	}
	client.Disconnect(ctx)
	if matches, _ := filepath.Glob(filepath.Join(data, "*")); len(matches) > 0 {
		t.Errorf("--data-dir holds %v on the mock", matches)
	}
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := proc.wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
