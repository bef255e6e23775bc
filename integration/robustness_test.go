package integration

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/wire"
)

// header returns a message header.
func header(length, requestID int32, op wire.OpCode) []byte {
	h := binary.LittleEndian.AppendUint32(nil, uint32(length))
	h = binary.LittleEndian.AppendUint32(h, uint32(requestID))
	h = binary.LittleEndian.AppendUint32(h, 0)
	return binary.LittleEndian.AppendUint32(h, uint32(op))
}

// TestBadFrames sends what no driver sends. Each bad frame costs only its
// own connection (or, for a body that is not BSON, only an error reply), the
// log says what happened and to whom, and a client connected all along
// keeps working.
func TestBadFrames(t *testing.T) {
	// A body whose string claims more bytes than the document holds.
	badBSON := []byte{0x12, 0, 0, 0, 0x02, 'p', 'i', 'n', 'g', 0, 0x40, 0, 0, 0, 'x', 0, 0, 0}
	invalidMsg := header(int32(wire.HeaderLen+4+1+len(badBSON)), 7, wire.OpMsg)
	invalidMsg = append(invalidMsg, 0, 0, 0, 0, 0)
	invalidMsg = append(invalidMsg, badBSON...)

	unknownOp := append(header(wire.HeaderLen+8, 1, 2002 /* OP_INSERT, removed in MongoDB 6 */), make([]byte, 8)...)

	for _, tc := range []struct {
		name    string
		send    []byte
		half    bool   // close the write side after sending, as a client dying mid-message
		closes  bool   // the server must close the connection
		logMsg  string // the warning expected in the log
		logText string // and a word of its error
	}{
		{name: "garbage", send: []byte("GET / HTTP/1.1\r\nHost: lethe\r\n\r\n"), closes: true,
			logMsg: "closing connection: bad message header", logText: "too large"},
		{name: "negative length", send: []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, closes: true,
			logMsg: "closing connection: bad message header", logText: "malformed"},
		{name: "truncated", send: append(header(200, 1, wire.OpMsg), 0, 0, 0, 0, 0, 0x20), half: true, closes: true,
			logMsg: "closing connection: message truncated", logText: "unexpected EOF"},
		{name: "2GB length", send: header(0x7fffffff, 1, wire.OpMsg), closes: true,
			logMsg: "closing connection: bad message header", logText: "too large"},
		{name: "unknown opcode", send: unknownOp, closes: true,
			logMsg: "closing connection: bad message", logText: "unsupported opcode"},
		{name: "invalid BSON", send: invalidMsg,
			logMsg: "invalid BSON in request", logText: "invalid BSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t)
			bystander := ts.NewClient(t, options.Client().SetMaxPoolSize(1))
			if err := bystander.Ping(testCtx(t), nil); err != nil {
				t.Fatalf("bystander ping: %v", err)
			}

			c := dialRaw(t, ts)
			c.send(tc.send)
			if tc.half {
				c.Conn.(*net.TCPConn).CloseWrite()
			}
			if tc.closes {
				c.expectClosed()
			} else {
				m := c.receive()
				reply := bson.Raw(m.Msg.Body)
				if code := lookup(t, reply, "code").AsInt64(); code != 22 || m.Header.ResponseTo != 7 {
					t.Errorf("reply to %d: %s, want code 22 for request 7", m.Header.ResponseTo, reply)
				}
				// The connection survives its bad request.
				if ok := lookup(t, c.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}), "ok").AsFloat64(); ok != 1 {
					t.Error("ping after the invalid request failed")
				}
			}

			entries := ts.Logs.FilterMessage(tc.logMsg).FilterField(zapString("remote", c.LocalAddr().String())).All()
			if len(entries) != 1 {
				t.Fatalf("log has %d %q warnings for %s; all entries:\n%s", len(entries), tc.logMsg, c.LocalAddr(), dumpLogs(ts))
			}
			if e := entries[0]; !strings.Contains(e.ContextMap()["error"].(string), tc.logText) {
				t.Errorf("log error %q lacks %q", e.ContextMap()["error"], tc.logText)
			}

			if err := bystander.Ping(testCtx(t), nil); err != nil {
				t.Errorf("bystander ping after the bad frame: %v", err)
			}
		})
	}
}

// TestManyConnections opens 500 connections at once and pings 100 times on
// each.
func TestManyConnections(t *testing.T) {
	const conns, pings = 500, 100
	ts := startServer(t)
	raws := make([]*rawConn, conns)
	for i := range raws {
		raws[i] = dialRaw(t, ts)
	}
	// Every connection is served at the same time: serverStatus counts them.
	for _, c := range raws {
		c.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	}
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if cur := lookup(t, status, "connections", "current").AsInt64(); cur < conns {
		t.Fatalf("connections.current = %d, want at least %d", cur, conns)
	}

	start := time.Now()
	var okCount atomic.Int64
	var wg sync.WaitGroup
	for _, c := range raws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ping := c.msgFrame(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "test"}})
			buf := make([]byte, 0, 256)
			for range pings {
				c.SetDeadline(time.Now().Add(20 * time.Second))
				if _, err := c.Write(ping); err != nil {
					return
				}
				_, frame, err := wire.ReadFrame(c, wire.MaxMessageSize, buf)
				if err != nil {
					return
				}
				m, err := wire.Decode(frame)
				if err != nil || m.Msg == nil {
					return
				}
				if v, err := bson.Raw(m.Msg.Body).LookupErr("ok"); err == nil && v.AsFloat64() == 1 {
					okCount.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := okCount.Load(); got != conns*pings {
		t.Fatalf("%d of %d pings succeeded", got, conns*pings)
	}
	t.Logf("%d pings on %d connections in %v", conns*pings, conns, time.Since(start))
}

// TestMaxConns fills the server up to --max-conns: the connection beyond the
// limit is closed at once and logged, the ones within keep working, and a
// freed slot can be taken again.
func TestMaxConns(t *testing.T) {
	const limit = 20
	ts := startServer(t, withMaxConns(limit))
	if err := ts.Client.Ping(testCtx(t), nil); err != nil {
		t.Fatal(err)
	}
	var open []*rawConn
	for len(open) <= limit {
		c := dialRaw(t, ts)
		if !tryPing(c) {
			break
		}
		open = append(open, c)
	}
	if len(open) > limit {
		t.Fatalf("%d raw connections served beside the driver's, limit %d", len(open), limit)
	}
	if n := ts.Logs.FilterMessage("connection refused: too many open connections").Len(); n != 1 {
		t.Errorf("%d refusals logged, want 1", n)
	}
	for _, c := range open {
		if !tryPing(c) {
			t.Fatal("a connection within the limit stopped working")
		}
	}

	open[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialRaw(t, ts)
		if tryPing(c) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection accepted after one closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tryPing pings over c and reports whether the server answered.
func tryPing(c *rawConn) bool {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(c.msgFrame(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})); err != nil {
		return false
	}
	_, frame, err := wire.ReadFrame(c, wire.MaxMessageSize, nil)
	return err == nil && len(frame) > 0
}
