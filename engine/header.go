package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/lethedb/lethe/ttlindex"
)

// A stored document value is a fixed header followed by the user's BSON.
// The header carries what TTL needs so that visibility costs no BSON parse.
const (
	formatV1  = 1
	headerLen = 1 + 8 + 4 // format, _ts (ms), document ttl
)

type header struct {
	ts  int64 // last write, ms since the epoch
	ttl ttlindex.DocTTL
}

func appendHeader(dst []byte, h header) []byte {
	dst = append(dst, formatV1)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ts))
	return binary.BigEndian.AppendUint32(dst, uint32(h.ttl))
}

// splitValue separates a stored value into its header and document.
func splitValue(v []byte) (header, []byte, error) {
	if len(v) < headerLen || v[0] != formatV1 {
		return header{}, nil, fmt.Errorf("engine: corrupt document value (%d bytes)", len(v))
	}
	h := header{
		ts:  int64(binary.BigEndian.Uint64(v[1:9])),
		ttl: ttlindex.DocTTL(int32(binary.BigEndian.Uint32(v[9:13]))),
	}
	return h, v[headerLen:], nil
}
