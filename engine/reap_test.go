package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/record"
)

// TestReaperLogsEachBatch covers TTL spec rule 23: a debug line per batch
// with the collection, the count and the duration.
func TestReaperLogsEachBatch(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(t.TempDir(), Options{Clock: clock, Logger: zap.New(core), NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 5}})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	for i := 0; i < 3; i++ {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(5 * time.Second)
	n, err := e.Reaper().Pass()
	if err != nil || n != 3 {
		t.Fatalf("pass deleted %d, %v", n, err)
	}
	entries := logs.FilterMessage("ttl: purged expired documents").All()
	if len(entries) != 1 {
		t.Fatalf("%d batch log lines, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	if f["ns"] != "db.c" || f["count"] != int64(3) || f["duration"] == nil {
		t.Fatalf("log fields %v", f)
	}
	// The purge is physical: nothing is left in the document range.
	st := e.collection("db", "c").st()
	lo, hi := record.DocRange(st.meta.ID)
	it, _ := rawIter(e, lo, hi)
	defer it.Close()
	if it.First() {
		t.Fatal("documents remain in storage after the reaper's pass")
	}
}

func TestOpenRefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := Open(dir, Options{NoReaper: true}); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second open of %s: %v", dir, err)
	}
}

// TestDescendingDateTTLIndex: the reaper finds due dates on a descending
// TTL index, whose keys are inverted, and only those.
func TestDescendingDateTTLIndex(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clock.NewManual(start)
	e, err := Open(t.TempDir(), Options{Clock: clock, NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: -1}}}, {Key: "name", Value: "at_-1"}, {Key: "expireAfterSeconds", Value: 10}})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	for i, at := range []time.Time{start.Add(-time.Hour), start, start.Add(time.Hour)} {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "at", Value: at}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	if n, err := e.Reaper().Pass(); err != nil || n != 2 {
		t.Fatalf("pass deleted %d, %v; want the two dates at least 10 s old", n, err)
	}
	if n, _ := e.Count(context.Background(), "db", "c", nil, 0, 0, bson.RawValue{}); n != 1 {
		t.Fatalf("%d documents left, want 1", n)
	}
}
