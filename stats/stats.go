package stats

import (
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/conn"
	"github.com/lethedb/lethe/wire"
)

// Counters are the counters serverStatus reports. They are updated with
// atomic adds on the request path and read without stopping it. The zero
// value is ready.
type Counters struct {
	ops opcounters
	// Traffic is what the transport reads and writes (package conn).
	Traffic conn.Traffic
}

// opcounters count commands by kind, as serverStatus.opcounters. Unlike
// MongoDB, which counts inserted documents and update and delete
// statements, every command counts once.
type opcounters struct {
	insert, query, update, delete, getmore, command atomic.Int64
}

// Count counts one command by its registered name: insert, find, update,
// delete and getMore under their kinds, any other under command.
func (c *Counters) Count(name string) {
	o := &c.ops
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

// Opcounters is serverStatus.opcounters.
func (c *Counters) Opcounters() bson.D {
	o := &c.ops
	return bson.D{
		{Key: "insert", Value: o.insert.Load()},
		{Key: "query", Value: o.query.Load()},
		{Key: "update", Value: o.update.Load()},
		{Key: "delete", Value: o.delete.Load()},
		{Key: "getmore", Value: o.getmore.Load()},
		{Key: "command", Value: o.command.Load()},
	}
}

// Network is serverStatus.network.
func (c *Counters) Network() bson.D {
	var comp bson.D
	for _, cp := range []wire.Compressor{wire.CompressorSnappy, wire.CompressorZstd, wire.CompressorZlib} {
		cs := &c.Traffic.ByCompressor[cp]
		comp = append(comp, bson.E{Key: cp.String(), Value: bson.D{
			{Key: "compressor", Value: bson.D{{Key: "bytesIn", Value: cs.CompressorIn.Load()}, {Key: "bytesOut", Value: cs.CompressorOut.Load()}}},
			{Key: "decompressor", Value: bson.D{{Key: "bytesIn", Value: cs.DecompressorIn.Load()}, {Key: "bytesOut", Value: cs.DecompressorOut.Load()}}},
		}})
	}
	return bson.D{
		{Key: "bytesIn", Value: c.Traffic.BytesIn.Load()},
		{Key: "bytesOut", Value: c.Traffic.BytesOut.Load()},
		{Key: "numRequests", Value: c.Traffic.Requests.Load()},
		{Key: "compression", Value: comp},
	}
}
