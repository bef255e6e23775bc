package integration

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/wire"
)

// rawConn is a client connection that writes wire frames by hand, for what
// drivers never send.
type rawConn struct {
	net.Conn
	t      *testing.T
	nextID int32
	buf    []byte
}

func dialRaw(t *testing.T, ts *testServer) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", ts.Srv.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{Conn: nc, t: t}
}

// msgFrame encodes an OP_MSG carrying body.
func (c *rawConn) msgFrame(body any) []byte {
	c.t.Helper()
	c.nextID++
	return wire.AppendMsg(nil, c.nextID, 0, &wire.Msg{Body: marshalDoc(c.t, body)})
}

func (c *rawConn) send(frame []byte) {
	c.t.Helper()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(frame); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// receive reads and decodes one message.
func (c *rawConn) receive() *wire.Message {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, frame, err := wire.ReadFrame(c, wire.MaxMessageSize, c.buf)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	m, err := wire.Decode(frame)
	if err != nil {
		c.t.Fatalf("decode reply: %v", err)
	}
	return m
}

// command sends body as an OP_MSG and returns the reply's body.
func (c *rawConn) command(body any) bson.Raw {
	c.t.Helper()
	c.send(c.msgFrame(body))
	m := c.receive()
	if m.Msg == nil {
		c.t.Fatalf("reply is %s, want OP_MSG", m.Header.OpCode)
	}
	return bson.Raw(m.Msg.Body)
}

// expectClosed waits for the server to close the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	case errors.As(err, &ne) && ne.Timeout():
		c.t.Fatalf("server kept the connection open")
	case err == nil:
		c.t.Fatalf("server sent %d bytes instead of closing", n)
	}
	// Anything else is a reset, which also means closed.
}

func marshalDoc(t *testing.T, v any) bsoncore.Document {
	t.Helper()
	if raw, ok := v.(bson.Raw); ok {
		return bsoncore.Document(raw)
	}
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return b
}
