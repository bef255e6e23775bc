package conn

import (
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/wire"
)

// echo answers every request with {db: <$db>, ok: 1} and counts what the
// transport tells it.
type echo struct{ closed chan string }

func (e *echo) Open(*Conn) Handler { return e }

func (e *echo) Serve(req *Request) Reply {
	var firsts bson.A
	for _, d := range req.Sequences["documents"] {
		firsts = append(firsts, d.Index(0).Value())
	}
	doc, _ := bson.Marshal(bson.D{{Key: "db", Value: req.DB}, {Key: "documents", Value: firsts}, {Key: "sequences", Value: req.Sequences != nil}, {Key: "ok", Value: 1.0}})
	return Reply{Doc: doc, StreamNext: -1}
}

func (e *echo) ErrorReply(err *mongoerr.Error) bson.Raw {
	doc, _ := bson.Marshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "code", Value: int32(err.Code)}})
	return doc
}

func (e *echo) HoldsCursors() bool   { return false }
func (e *echo) PeerGone(error)       {}
func (e *echo) Trim()                {}
func (e *echo) Closed(reason string) { e.closed <- reason }

// TestServesAndCloses: a request reaches the handler with its $db, one
// without $db gets the handler's error reply without reaching it, and
// the handler learns when the client leaves.
func TestServesAndCloses(t *testing.T) {
	var traffic Traffic
	h := &echo{closed: make(chan string, 1)}
	l, err := Listen(Config{Addr: "127.0.0.1:0", Logger: zap.NewNop(), Traffic: &traffic, MessageTimeout: 5 * time.Second}, h)
	if err != nil {
		t.Fatal(err)
	}
	l.Serve()
	defer l.Shutdown(t.Context())
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(body bson.D) bson.Raw {
		t.Helper()
		raw, _ := bson.Marshal(body)
		if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: bsoncore.Document(raw)})); err != nil {
			t.Fatal(err)
		}
		_, frame, err := wire.ReadFrame(nc, wire.MaxMessageSize, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.Decode(frame)
		if err != nil || m.Msg == nil {
			t.Fatalf("reply %v %v", m, err)
		}
		return bson.Raw(m.Msg.Body)
	}
	if got := roundTrip(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "test"}}); got.Lookup("db").StringValue() != "test" {
		t.Errorf("reply %v", got)
	}
	if got := roundTrip(bson.D{{Key: "ping", Value: 1}}); got.Lookup("code").Int32() != int32(codeMissingDB) {
		t.Errorf("reply without $db %v", got)
	}
	// Document sequences reach the handler with their documents, and only
	// with the request that sent them.
	sent := func(ids ...int32) string {
		docs := make([]bsoncore.Document, len(ids))
		for i, id := range ids {
			docs[i] = bsoncore.BuildDocument(nil, bsoncore.AppendInt32Element(nil, "_id", id))
		}
		raw, _ := bson.Marshal(bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"}})
		if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: bsoncore.Document(raw), Sequences: []wire.Sequence{{Identifier: "documents", Documents: docs}}})); err != nil {
			t.Fatal(err)
		}
		_, frame, err := wire.ReadFrame(nc, wire.MaxMessageSize, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.Decode(frame)
		if err != nil {
			t.Fatal(err)
		}
		return bson.Raw(m.Msg.Body).Lookup("documents").String()
	}
	if got := sent(1, 2, 3); got != `[{"$numberInt":"1"},{"$numberInt":"2"},{"$numberInt":"3"}]` {
		t.Errorf("documents %s", got)
	}
	if got := roundTrip(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "test"}}); got.Lookup("sequences").Boolean() {
		t.Errorf("a request without sequences has some: %v", got)
	}
	if got := sent(4); got != `[{"$numberInt":"4"}]` {
		t.Errorf("documents %s", got)
	}
	if traffic.Requests.Load() != 5 || l.Open() != 1 || l.Accepted() != 1 {
		t.Errorf("requests %d, open %d, accepted %d", traffic.Requests.Load(), l.Open(), l.Accepted())
	}
	nc.Close()
	select {
	case reason := <-h.closed:
		if reason != "client closed the connection" {
			t.Errorf("closed for %q", reason)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not told the connection closed")
	}
}

// waiter answers {wait: 1} only once the transport says the client went
// away (or after 5s), and anything else at once.
type waiter struct {
	echo
	gone chan error
}

func (w *waiter) Open(*Conn) Handler { return w }

func (w *waiter) Serve(req *Request) Reply {
	if _, err := req.Body.LookupErr("wait"); err == nil {
		select {
		case <-w.gone:
		case <-time.After(5 * time.Second):
		}
	}
	return w.echo.Serve(req)
}

func (w *waiter) PeerGone(err error) { w.gone <- err }

// TestPeerWatch: a command that runs long after quick ones learns that its
// client closed the connection, and the connection's quick commands, and
// one that sends the next request while the last runs, do not.
func TestPeerWatch(t *testing.T) {
	h := &waiter{echo: echo{closed: make(chan string, 1)}, gone: make(chan error, 1)}
	l, err := Listen(Config{Addr: "127.0.0.1:0", Logger: zap.NewNop(), Traffic: &Traffic{}, MessageTimeout: 5 * time.Second}, h)
	if err != nil {
		t.Fatal(err)
	}
	l.Serve()
	defer l.Shutdown(t.Context())
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	send := func(body bson.D) {
		t.Helper()
		raw, _ := bson.Marshal(body)
		if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: bsoncore.Document(raw)})); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() {
		t.Helper()
		if _, _, err := wire.ReadFrame(nc, wire.MaxMessageSize, nil); err != nil {
			t.Fatal(err)
		}
	}
	ping := bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "test"}}
	for range 50 {
		send(ping)
		receive()
		time.Sleep(time.Millisecond)
	}
	// A request pipelined behind a long one ends the watch without a word
	// to the handler; the long one then runs its course.
	send(bson.D{{Key: "wait", Value: 1}, {Key: "$db", Value: "test"}})
	time.Sleep(3 * watchPeerAfter)
	start := time.Now()
	send(ping)
	receive()
	receive()
	if time.Since(start) < 4*time.Second {
		t.Error("the handler was told the client went away when it sent a request")
	}
	send(bson.D{{Key: "wait", Value: 1}, {Key: "$db", Value: "test"}})
	time.Sleep(3 * watchPeerAfter)
	start = time.Now()
	nc.Close()
	select {
	case <-h.closed:
		if time.Since(start) > 2*time.Second {
			t.Errorf("the long command learnt that its client went away after %v", time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not close")
	}
}
