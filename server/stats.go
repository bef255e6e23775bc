package server

import (
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/conn"
	"github.com/lethedb/lethe/wire"
)

// stats are the counters serverStatus reports. They are updated with atomic
// adds on the request path and read without stopping it.
type stats struct {
	ops opcounters
	// traffic is what the transport reads and writes (package conn).
	traffic conn.Traffic
}

// opcounters count commands by kind, as serverStatus.opcounters. Unlike
// MongoDB, which counts inserted documents and update and delete
// statements, every command counts once.
type opcounters struct {
	insert, query, update, delete, getmore, command atomic.Int64
}

func (o *opcounters) count(name string) {
	switch name {
	case "insert":
		o.insert.Add(1)
	case "find":
		o.query.Add(1)
	case "update":
		o.update.Add(1)
	case "delete":
		o.delete.Add(1)
	case "getMore":
		o.getmore.Add(1)
	default:
		o.command.Add(1)
	}
}

func (o *opcounters) doc() bson.D {
	return bson.D{
		{Key: "insert", Value: o.insert.Load()},
		{Key: "query", Value: o.query.Load()},
		{Key: "update", Value: o.update.Load()},
		{Key: "delete", Value: o.delete.Load()},
		{Key: "getmore", Value: o.getmore.Load()},
		{Key: "command", Value: o.command.Load()},
	}
}

// networkDoc is serverStatus.network.
func (st *stats) networkDoc() bson.D {
	var comp bson.D
	for _, c := range []wire.Compressor{wire.CompressorSnappy, wire.CompressorZstd, wire.CompressorZlib} {
		cs := &st.traffic.ByCompressor[c]
		comp = append(comp, bson.E{Key: c.String(), Value: bson.D{
			{Key: "compressor", Value: bson.D{{Key: "bytesIn", Value: cs.CompressorIn.Load()}, {Key: "bytesOut", Value: cs.CompressorOut.Load()}}},
			{Key: "decompressor", Value: bson.D{{Key: "bytesIn", Value: cs.DecompressorIn.Load()}, {Key: "bytesOut", Value: cs.DecompressorOut.Load()}}},
		}})
	}
	return bson.D{
		{Key: "bytesIn", Value: st.traffic.BytesIn.Load()},
		{Key: "bytesOut", Value: st.traffic.BytesOut.Load()},
		{Key: "numRequests", Value: st.traffic.Requests.Load()},
		{Key: "compression", Value: comp},
	}
}
