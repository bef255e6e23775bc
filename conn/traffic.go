package conn

import (
	"sync/atomic"

	"github.com/lethedb/lethe/wire"
)

// Traffic counts what the transport reads and writes, as serverStatus's
// network section reports it. The counters are atomic: the request path
// adds to them and serverStatus reads them without stopping it.
type Traffic struct {
	BytesIn, BytesOut atomic.Int64 // as sent, compressed or not
	Requests          atomic.Int64
	// ByCompressor is indexed by wire.Compressor.
	ByCompressor [wire.CompressorZstd + 1]CompressorTraffic
}

// CompressorTraffic counts the bytes through one compressor, in MongoDB's
// terms: the compressor takes replies in and puts compressed bytes out, the
// decompressor the other way round.
type CompressorTraffic struct {
	CompressorIn, CompressorOut     atomic.Int64
	DecompressorIn, DecompressorOut atomic.Int64
}

func (t *Traffic) compressed(c wire.Compressor, in, out int64) {
	t.ByCompressor[c].CompressorIn.Add(in)
	t.ByCompressor[c].CompressorOut.Add(out)
}

func (t *Traffic) decompressed(c wire.Compressor, in, out int64) {
	t.ByCompressor[c].DecompressorIn.Add(in)
	t.ByCompressor[c].DecompressorOut.Add(out)
}
