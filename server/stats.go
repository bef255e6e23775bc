package server

import (
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/wire"
)

// stats are the counters serverStatus reports. They are updated with atomic
// adds on the request path and read without stopping it.
type stats struct {
	ops       opcounters
	connsSeen atomic.Int64 // connections ever accepted; also the source of connection IDs
	bytesIn   atomic.Int64
	bytesOut  atomic.Int64
	requests  atomic.Int64
	// byCompressor is indexed by wire.Compressor.
	byCompressor [wire.CompressorZstd + 1]compressionStats
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

// compressionStats count the bytes through one compressor, in MongoDB's
// terms: the compressor takes replies in and puts compressed bytes out, the
// decompressor the other way round.
type compressionStats struct {
	compressorIn, compressorOut     atomic.Int64
	decompressorIn, decompressorOut atomic.Int64
}

func (st *stats) compression(c wire.Compressor) *compressionStats {
	return &st.byCompressor[c]
}

func (c *compressionStats) compressed(in, out int64) {
	c.compressorIn.Add(in)
	c.compressorOut.Add(out)
}

func (c *compressionStats) decompressed(in, out int64) {
	c.decompressorIn.Add(in)
	c.decompressorOut.Add(out)
}

// networkDoc is serverStatus.network.
func (st *stats) networkDoc() bson.D {
	var comp bson.D
	for _, c := range []wire.Compressor{wire.CompressorSnappy, wire.CompressorZstd, wire.CompressorZlib} {
		cs := st.compression(c)
		comp = append(comp, bson.E{Key: c.String(), Value: bson.D{
			{Key: "compressor", Value: bson.D{{Key: "bytesIn", Value: cs.compressorIn.Load()}, {Key: "bytesOut", Value: cs.compressorOut.Load()}}},
			{Key: "decompressor", Value: bson.D{{Key: "bytesIn", Value: cs.decompressorIn.Load()}, {Key: "bytesOut", Value: cs.decompressorOut.Load()}}},
		}})
	}
	return bson.D{
		{Key: "bytesIn", Value: st.bytesIn.Load()},
		{Key: "bytesOut", Value: st.bytesOut.Load()},
		{Key: "numRequests", Value: st.requests.Load()},
		{Key: "compression", Value: comp},
	}
}
