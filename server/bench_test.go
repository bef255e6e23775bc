package server

import (
	"net"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/wire"
)

// BenchmarkPing measures a ping round trip over loopback TCP, the floor under
// every command's latency. The client side reuses its buffers, so allocations
// are mostly the server's.
func BenchmarkPing(b *testing.B) {
	s, _, _ := startTestServer(b)
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	body, _ := bson.Marshal(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	ping := wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: body})
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nc.Write(ping); err != nil {
			b.Fatal(err)
		}
		if _, _, err := wire.ReadFrame(nc, wire.MaxMessageSize, buf); err != nil {
			b.Fatal(err)
		}
	}
}
