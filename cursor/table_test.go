package cursor

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestIdleCursorsAreClosedAfterTenMinutes(t *testing.T) {
	var tab Table
	req := testOwner{Conn: 1, Client: "client"}
	busy, _ := tab.Add(req, &SliceSource{docs: []bson.Raw{{}}}, "db.c", false)
	idle, _ := tab.Add(req, &SliceSource{docs: []bson.Raw{{}}}, "db.c", false)
	start := time.Now()
	tab.open[busy].lastUsed = start.Add(5 * time.Minute)

	tab.mu.Lock()
	tab.sweepLocked(start.Add(IdleTimeout + time.Minute))
	tab.mu.Unlock()
	if tab.open[idle] != nil {
		t.Fatal("a cursor idle for 11 minutes is still open")
	}
	if tab.open[busy] == nil {
		t.Fatal("a cursor used 6 minutes ago was closed")
	}
}

func TestSliceSourceBatches(t *testing.T) {
	src := &SliceSource{docs: []bson.Raw{make(bson.Raw, 10), make(bson.Raw, 10), make(bson.Raw, 10)}}
	b, _ := src.NextBatch(context.Background(), 2, 1<<20)
	if len(b) != 2 || src.Exhausted() {
		t.Fatalf("first batch %d, exhausted %v", len(b), src.Exhausted())
	}
	b, _ = src.NextBatch(context.Background(), 0, 5)
	if len(b) != 1 || !src.Exhausted() {
		t.Fatalf("second batch %d, exhausted %v", len(b), src.Exhausted())
	}
}

// TestNoCursorTimeoutClosesWithItsConnection checks that a cursor exempt
// from the idle timeout closes when the connection that opened it does, if
// it was opened outside any session; one opened in a session closes with
// the session instead, as in MongoDB.
func TestNoCursorTimeoutClosesWithItsConnection(t *testing.T) {
	var tab Table
	req := testOwner{Conn: 1, Client: "client"}
	other := testOwner{Conn: 2, Client: "client"}
	lsid := "0123456789abcdef" // a session, packed
	inSession, _ := tab.Add(testOwner{Conn: 1, Client: "client", Lsid: lsid}, &SliceSource{docs: []bson.Raw{{}}}, "db.c", true)
	kept, _ := tab.Add(req, &SliceSource{docs: []bson.Raw{{}}}, "db.c", true)
	plain, _ := tab.Add(req, &SliceSource{docs: []bson.Raw{{}}}, "db.c", false)
	elsewhere, _ := tab.Add(other, &SliceSource{docs: []bson.Raw{{}}}, "db.c", true)

	tab.SweepIdle(time.Now().Add(IdleTimeout + time.Minute))
	if tab.open[kept] == nil || tab.open[elsewhere] == nil {
		t.Fatal("the idle sweep closed a noCursorTimeout cursor")
	}
	if tab.open[plain] != nil {
		t.Fatal("the idle sweep left a plain cursor open")
	}
	tab.ConnClosed(1)
	if tab.open[kept] != nil {
		t.Error("a noCursorTimeout cursor outlived its connection")
	}
	if tab.open[elsewhere] == nil {
		t.Error("another connection's noCursorTimeout cursor was closed")
	}
	if tab.open[inSession] == nil {
		t.Fatal("a noCursorTimeout cursor of a session closed with its connection")
	}
	if n := tab.KillSessions(func(id string) bool { return id == lsid }); n != 1 || tab.open[inSession] != nil {
		t.Errorf("killSessions closed %d cursors; the session's open: %v", n, tab.open[inSession] != nil)
	}
	if n := tab.OpenBy(1); n != 0 {
		t.Errorf("connection 1 still counts %d cursors", n)
	}
}

// testOwner opens the cursors of tests.
type testOwner Owner

func (o testOwner) CursorOwner() Owner { return Owner(o) }
