package integration

import (
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Lethe bounds sessions and cursors per client as well as in all: a client
// is its user with access control, else its address. The tests tell
// clients apart without access control by their address: every 127.x.y.z
// is loopback on Linux, so a test dials from 127.0.0.2 and so on, while
// the bystander of underAttack and ts.Client come from 127.0.0.1.

// dialRawFrom connects to the server from the loopback address ip.
func dialRawFrom(t *testing.T, ts *testServer, ip string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", ts.Srv.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{Conn: nc, t: t}
}

// clientFrom connects a driver client from the loopback address ip.
func clientFrom(t *testing.T, ts *testServer, ip string, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return ts.NewClient(t, append([]*options.ClientOptions{options.Client().SetDialer(d)}, opts...)...)
}
