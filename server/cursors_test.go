package server

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestIdleCursorsAreClosedAfterTenMinutes(t *testing.T) {
	var tab cursorTable
	req := &Request{Conn: &Conn{id: 1}}
	busy, _ := tab.add(req, &sliceSource{docs: []bson.Raw{{}}}, "db.c", false)
	idle, _ := tab.add(req, &sliceSource{docs: []bson.Raw{{}}}, "db.c", false)
	start := time.Now()
	tab.open[busy].lastUsed = start.Add(5 * time.Minute)

	tab.mu.Lock()
	tab.sweepLocked(start.Add(cursorIdleTimeout + time.Minute))
	tab.mu.Unlock()
	if tab.open[idle] != nil {
		t.Fatal("a cursor idle for 11 minutes is still open")
	}
	if tab.open[busy] == nil {
		t.Fatal("a cursor used 6 minutes ago was closed")
	}
}

func TestSliceSourceBatches(t *testing.T) {
	src := &sliceSource{docs: []bson.Raw{make(bson.Raw, 10), make(bson.Raw, 10), make(bson.Raw, 10)}}
	b, _ := src.NextBatch(context.Background(), 2, 1<<20)
	if len(b) != 2 || src.Exhausted() {
		t.Fatalf("first batch %d, exhausted %v", len(b), src.Exhausted())
	}
	b, _ = src.NextBatch(context.Background(), 0, 5)
	if len(b) != 1 || !src.Exhausted() {
		t.Fatalf("second batch %d, exhausted %v", len(b), src.Exhausted())
	}
}
