package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/session"
)

// sweepAt runs the idle sweep as if it were at.
func sweepAt(tab *cursorTable, at time.Time) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	tab.lastSweep = time.Time{}
	tab.sweepLocked(at)
}

// TestNoCursorTimeout checks that find's noCursorTimeout keeps an idle
// cursor open past the idle timeout, while a cursor without it closes.
func TestNoCursorTimeout(t *testing.T) {
	s, client, _ := startTestServer(t)
	ctx := context.Background()
	coll := client.Database("test").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	kept, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1).SetNoCursorTimeout(true))
	if err != nil {
		t.Fatal(err)
	}
	swept, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	sweepAt(&s.cursors, time.Now().Add(cursorIdleTimeout+time.Minute))

	var all []bson.Raw
	if err := kept.All(ctx, &all); err != nil || len(all) != 2 {
		t.Errorf("noCursorTimeout cursor after the idle timeout: %d documents, %v; want 2", len(all), err)
	}
	if err := swept.All(ctx, &all); !isCode(err, 43) { // CursorNotFound
		t.Errorf("plain cursor after the idle timeout: %v, want CursorNotFound", err)
	}
}

// TestNoCursorTimeoutClosesWithItsConnection checks that a cursor exempt
// from the idle timeout closes when the connection that opened it does, if
// it was opened outside any session; one opened in a session closes with
// the session instead, as in MongoDB.
func TestNoCursorTimeoutClosesWithItsConnection(t *testing.T) {
	var tab cursorTable
	req := &Request{Conn: &Conn{id: 1}}
	other := &Request{Conn: &Conn{id: 2}}
	lsid := packKey(session.Key{ID: session.ID([]byte("0123456789abcdef")), UID: session.NoUser})
	inSession, _ := tab.add(&Request{Conn: &Conn{id: 1}, lsid: lsid}, &sliceSource{docs: []bson.Raw{{}}}, "db.c", true)
	kept, _ := tab.add(req, &sliceSource{docs: []bson.Raw{{}}}, "db.c", true)
	plain, _ := tab.add(req, &sliceSource{docs: []bson.Raw{{}}}, "db.c", false)
	elsewhere, _ := tab.add(other, &sliceSource{docs: []bson.Raw{{}}}, "db.c", true)

	sweepAt(&tab, time.Now().Add(cursorIdleTimeout+time.Minute))
	if tab.open[kept] == nil || tab.open[elsewhere] == nil {
		t.Fatal("the idle sweep closed a noCursorTimeout cursor")
	}
	if tab.open[plain] != nil {
		t.Fatal("the idle sweep left a plain cursor open")
	}
	tab.connClosed(1)
	if tab.open[kept] != nil {
		t.Error("a noCursorTimeout cursor outlived its connection")
	}
	if tab.open[elsewhere] == nil {
		t.Error("another connection's noCursorTimeout cursor was closed")
	}
	if tab.open[inSession] == nil {
		t.Fatal("a noCursorTimeout cursor of a session closed with its connection")
	}
	if n := tab.killSessions(func(id string) bool { return id == lsid }); n != 1 || tab.open[inSession] != nil {
		t.Errorf("killSessions closed %d cursors; the session's open: %v", n, tab.open[inSession] != nil)
	}
	if n := tab.openBy(1); n != 0 {
		t.Errorf("connection 1 still counts %d cursors", n)
	}
}

func isCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}
