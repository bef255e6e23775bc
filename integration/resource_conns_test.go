package integration

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/server"
	"github.com/lethedb/lethe/wire"
)

func withMessageTimeout(d time.Duration) serverOption {
	return func(c *server.Config) { c.MessageTimeout = d }
}

func withIdleTimeout(d time.Duration) serverOption {
	return func(c *server.Config) { c.IdleTimeout = d }
}

// TestStalledSocketsDoNotLockOutClients fills --max-conns with sockets that
// send nothing and sockets that send one byte of a message and then stall.
// While they hold every slot no one else gets in, but the message timeout
// frees the slots and a real client is served within it; a client connected
// before is served throughout.
func TestStalledSocketsDoNotLockOutClients(t *testing.T) {
	const limit, timeout = 40, time.Second
	ts := startServer(t, withMaxConns(limit), withMessageTimeout(timeout))
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		var stalled []*rawConn
		// More than the free slots: the last ones are refused.
		for i := range limit {
			c := dialRaw(t, ts)
			if i%2 == 1 {
				c.send([]byte{0x20})
			}
			stalled = append(stalled, c)
		}
		start := time.Now()
		if probe := dialRaw(t, ts); tryPingWithin(probe, 200*time.Millisecond) {
			t.Fatal("a new connection was served while stalled sockets held every slot")
		}
		for {
			probe := dialRaw(t, ts)
			if tryPingWithin(probe, 200*time.Millisecond) {
				probe.Close()
				break
			}
			probe.Close()
			if time.Since(start) > timeout+5*time.Second {
				t.Fatalf("no connection served %v after the slots filled, message timeout %v", time.Since(start), timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("a new client was served %v after the slots filled (message timeout %v)", time.Since(start).Round(time.Millisecond), timeout)
		// Every stalled socket is closed by the server, refused at once or
		// timed out.
		for _, c := range stalled {
			c.expectClosed()
			c.Close()
		}
	})
	first := ts.Logs.FilterMessage("closing connection: no message within the message timeout of connecting").Len()
	partial := ts.Logs.FilterMessage("closing connection: message incomplete after the message timeout").Len()
	if first == 0 || partial == 0 {
		t.Errorf("%d silent and %d stalled sockets closed by the message timeout, want both", first, partial)
	}
	refused := ts.Logs.FilterMessage("connection refused: too many open connections").Len()
	if refused == 0 {
		t.Error("no connection refused: the stalled sockets did not fill the slots")
	}
	status := run(t, ts.Client.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	if n := lookup(t, status, "connections", "rejected").AsInt64(); n != int64(refused) {
		t.Errorf("serverStatus counts %d rejected connections, the log %d", n, refused)
	}
}

// TestDeclaredHugeMessagesCostLittle opens connections that each send the
// header of a 48 MB message and then stall: the server must not set 48 MB
// aside for each before the bytes arrive.
func TestDeclaredHugeMessagesCostLittle(t *testing.T) {
	const conns, timeout = 40, time.Second
	ts := startServer(t, withMessageTimeout(timeout))
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		var stalled []net.Conn
		for range conns {
			c := dialRaw(t, ts)
			c.send(append(header(wire.MaxMessageSize, 1, wire.OpMsg), 0, 0, 0, 0, 0))
			stalled = append(stalled, c)
		}
		// Each is closed by the message timeout, having held whatever it
		// made the server set aside until then.
		for _, c := range stalled {
			(&rawConn{Conn: c, t: t}).expectClosed()
			c.Close()
		}
	})
	if n := ts.Logs.FilterMessage("closing connection: message incomplete after the message timeout").Len(); n != conns {
		t.Errorf("%d connections closed by the message timeout, want %d", n, conns)
	}
}

// TestIdleTimeout closes a connection that sends nothing for --idle-timeout,
// unless it has an open cursor; with the default of 0 nothing is closed.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, withIdleTimeout(idle))
	coll := ts.Client.Database("test").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})

	quiet := dialRaw(t, ts)
	quiet.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	reading := dialRaw(t, ts)
	reply := reading.command(bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "$db", Value: "test"}})
	cursorID := lookup(t, reply, "cursor", "id").Int64()
	if cursorID == 0 {
		t.Fatal("find returned no cursor")
	}

	quiet.expectClosed()
	if n := ts.Logs.FilterMessage("closing idle connection").FilterField(zapString("remote", quiet.LocalAddr().String())).Len(); n != 1 {
		t.Errorf("the idle connection's closing logged %d times, want 1", n)
	}
	time.Sleep(2 * idle)
	reply = reading.command(bson.D{{Key: "getMore", Value: cursorID}, {Key: "collection", Value: "c"}, {Key: "$db", Value: "test"}})
	if batch, _ := lookup(t, reply, "cursor", "nextBatch").Array().Values(); len(batch) != 1 {
		t.Errorf("getMore after %v idle with an open cursor: %s", 2*idle, reply)
	}

	// Without an idle timeout a connection may stay silent.
	ts2 := startServer(t)
	silent := dialRaw(t, ts2)
	silent.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	time.Sleep(2 * idle)
	silent.command(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
}

// tryPingWithin pings over c and reports whether the server answered within d.
func tryPingWithin(c *rawConn, d time.Duration) bool {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write(c.msgFrame(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})); err != nil {
		return false
	}
	_, frame, err := wire.ReadFrame(c, wire.MaxMessageSize, nil)
	return err == nil && len(frame) > 0
}

// TestNonLoopbackWarning: without authentication, listening beyond
// loopback is worth a warning at start; loopback, or --auth, is not.
func TestNonLoopbackWarning(t *testing.T) {
	const warning = "listening on a non-loopback address without authentication: anyone who can reach it can read, change and drop every database; listen on 127.0.0.1 or put a firewall in front"
	local := startServer(t)
	if n := local.Logs.FilterMessage(warning).Len(); n != 0 {
		t.Errorf("%d warnings when listening on loopback", n)
	}
	all := startServer(t, func(c *server.Config) { c.Listen = "0.0.0.0:0" })
	if n := all.Logs.FilterMessage(warning).Len(); n != 1 {
		t.Errorf("%d warnings when listening on 0.0.0.0, want 1", n)
	}
	authed := startServer(t, func(c *server.Config) { c.Listen, c.Auth = "0.0.0.0:0", true })
	if n := authed.Logs.FilterMessage(warning).Len(); n != 0 {
		t.Errorf("%d warnings when listening on 0.0.0.0 with auth, want none", n)
	}
}

// TestUnreadRepliesTimeOut: a client that sends requests and never reads
// the replies blocks the server's writes once the socket buffers fill; the
// message timeout closes it instead of leaving its goroutine stuck.
func TestUnreadRepliesTimeOut(t *testing.T) {
	const timeout = time.Second
	ts := startServer(t, withMessageTimeout(timeout))
	mustInsert(t, ts.Client.Database("test").Collection("big"),
		bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: strings.Repeat("x", 1<<20)}})
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		c := dialRaw(t, ts)
		find := c.msgFrame(bson.D{{Key: "find", Value: "big"}, {Key: "$db", Value: "test"}})
		// Far more reply bytes than loopback buffers hold; the writes stop
		// succeeding once the server stops reading.
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for range 200 {
			if _, err := c.Write(find); err != nil {
				break
			}
		}
		start := time.Now()
		for ts.Logs.FilterMessage("closing connection: reply not taken within the message timeout").Len() == 0 {
			if time.Since(start) > timeout+5*time.Second {
				t.Fatal("the connection that reads no replies is still open")
			}
			time.Sleep(10 * time.Millisecond)
		}
		c.Close()
	})
}
