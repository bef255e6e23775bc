package conn

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/wire"
)

// sized answers {size: n} with {s: <n bytes>, ok: 1}.
type sized struct{ echo }

func (s *sized) Open(*Conn) Handler { return s }

func (s *sized) Serve(req *Request) Reply {
	n := req.Body.Lookup("size").Int32()
	doc, _ := bson.Marshal(bson.D{{Key: "s", Value: strings.Repeat("x", int(n))}, {Key: "ok", Value: 1.0}})
	return Reply{Doc: doc, StreamNext: -1}
}

// TestLargeRepliesAreWhole: replies on either side of the size from which
// they are sent from their own buffer (minVectoredReply) arrive as one
// whole frame each, with their bytes and the request's id, on a connection
// that carries several; a request that asks for a checksum gets one either
// way. The traffic counters count every byte sent.
func TestLargeRepliesAreWhole(t *testing.T) {
	var traffic Traffic
	h := &sized{echo{closed: make(chan string, 1)}}
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
	defer nc.Close() // on a failure before the close below
	var received int64
	for i, size := range []int{100, minVectoredReply - 30, minVectoredReply, 1 << 20, 200} {
		for _, flags := range []wire.MsgFlags{0, wire.FlagChecksumPresent} {
			id := int32(10*i) + int32(flags)
			raw, _ := bson.Marshal(bson.D{{Key: "size", Value: int32(size)}, {Key: "$db", Value: "test"}})
			if _, err := nc.Write(wire.AppendMsg(nil, id, 0, &wire.Msg{Flags: flags, Body: bsoncore.Document(raw)})); err != nil {
				t.Fatal(err)
			}
			_, frame, err := wire.ReadFrame(nc, wire.MaxMessageSize, nil)
			if err != nil {
				t.Fatal(err)
			}
			received += int64(len(frame))
			m, err := wire.Decode(frame)
			if err != nil || m.Msg == nil {
				t.Fatalf("reply of %d bytes, flags %d: %v", size, flags, err)
			}
			if m.Header.ResponseTo != id || m.Msg.Flags&wire.FlagChecksumPresent != flags {
				t.Errorf("reply of %d bytes, flags %d: responseTo %d, flags %d", size, flags, m.Header.ResponseTo, m.Msg.Flags)
			}
			want, _ := bson.Marshal(bson.D{{Key: "s", Value: strings.Repeat("x", size)}, {Key: "ok", Value: 1.0}})
			if !bytes.Equal(m.Msg.Body, want) {
				t.Fatalf("reply of %d bytes, flags %d: body of %d bytes differs", size, flags, len(m.Msg.Body))
			}
		}
	}
	// The server counts a reply after its write returns, which may be
	// after the client has read it: once the connection's goroutine has
	// finished, every count is in.
	nc.Close()
	select {
	case <-h.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was not told the connection closed")
	}
	if got := traffic.BytesOut.Load(); got != received {
		t.Errorf("BytesOut = %d, want the %d bytes received", got, received)
	}
}
