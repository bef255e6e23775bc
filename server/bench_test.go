package server

import (
	"context"
	"net"
	"sync/atomic"
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

// benchRoundTrip sends one prepared command repeatedly over one connection.
func benchRoundTrip(b *testing.B, s *Server, cmd bson.D) {
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	body, _ := bson.Marshal(cmd)
	msg := wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: body})
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := nc.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := wire.ReadFrame(nc, wire.MaxMessageSize, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindOneByID measures find {_id: x} limit 1, the hot read path,
// to compare with BenchmarkPing.
func BenchmarkFindOneByID(b *testing.B) {
	s, _, _ := startTestServer(b)
	var docs []bson.Raw
	for i := 0; i < 1000; i++ {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "name", Value: "someone"}, {Key: "n", Value: int32(i)}})
		docs = append(docs, d)
	}
	if _, err := s.eng.Insert(context.Background(), "bench", "c", docs, true); err != nil {
		b.Fatal(err)
	}
	benchRoundTrip(b, s, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int32(500)}}}, {Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}, {Key: "$db", Value: "bench"}})
}

// BenchmarkUpdateOneByID measures an update by _id, a synced write.
func BenchmarkUpdateOneByID(b *testing.B) {
	s, _, _ := startTestServer(b)
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(1)}, {Key: "n", Value: int32(0)}})
	if _, err := s.eng.Insert(context.Background(), "bench", "c", []bson.Raw{d}, true); err != nil {
		b.Fatal(err)
	}
	benchRoundTrip(b, s, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}}, {Key: "$db", Value: "bench"}})
}

// BenchmarkInsertParallel measures concurrent single-document inserts, each
// client on its own connection, as the load tool's insert workload does.
func BenchmarkInsertParallel(b *testing.B) {
	s, _, _ := startTestServer(b)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			b.Error(err)
			return
		}
		defer nc.Close()
		buf := make([]byte, 0, 4096)
		for pb.Next() {
			body, _ := bson.Marshal(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: next.Add(1)}, {Key: "pad", Value: "0123456789012345678901234567890123456789"}}}}, {Key: "$db", Value: "bench"}})
			if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, &wire.Msg{Body: body})); err != nil {
				b.Error(err)
				return
			}
			if _, _, err := wire.ReadFrame(nc, wire.MaxMessageSize, buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// driverArgs are the generic arguments a driver adds to every command of
// an implicit session under a context deadline, as the load tool's
// clients send them: the benchmarks below pay for them as the server does.
func driverArgs(db string) bson.D {
	return bson.D{
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: []byte("0123456789abcdef")}}}},
		{Key: "maxTimeMS", Value: int64(60000)},
		{Key: "$db", Value: db},
	}
}

// BenchmarkDriverPing measures ping as a driver sends it, with an lsid and
// maxTimeMS.
func BenchmarkDriverPing(b *testing.B) {
	s, _, _ := startTestServer(b)
	benchRoundTrip(b, s, append(bson.D{{Key: "ping", Value: 1}}, driverArgs("admin")...))
}

// BenchmarkDriverFindOne measures findOne by _id as a driver sends it.
func BenchmarkDriverFindOne(b *testing.B) {
	s, _, _ := startTestServer(b)
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int64(7)}, {Key: "n", Value: int32(0)}})
	if _, err := s.eng.Insert(context.Background(), "bench", "c", []bson.Raw{d}, true); err != nil {
		b.Fatal(err)
	}
	benchRoundTrip(b, s, append(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: int64(7)}}},
		{Key: "limit", Value: int64(1)}, {Key: "singleBatch", Value: true}}, driverArgs("bench")...))
}
