package record

import (
	"encoding/binary"
	"fmt"

	"github.com/lethedb/lethe/ttlindex"
)

// A stored document value is a fixed header followed by the user's BSON.
// The header carries what TTL needs so that visibility costs no BSON parse.
const (
	// FormatV1 is the first byte of every stored value of this layout.
	FormatV1 = 1
	// HeaderLen is the size of the header before the BSON.
	HeaderLen = 1 + 8 + 4 // format, _ts (ms), document ttl
)

// Header is the fixed part of a stored document value.
type Header struct {
	TS  int64 // last write, ms since the epoch
	TTL ttlindex.DocTTL
}

// AppendHeader appends h in the stored layout; the document's BSON follows.
func AppendHeader(dst []byte, h Header) []byte {
	dst = append(dst, FormatV1)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.TS))
	return binary.BigEndian.AppendUint32(dst, uint32(h.TTL))
}

// SplitValue separates a stored value into its header and document.
func SplitValue(v []byte) (Header, []byte, error) {
	if len(v) < HeaderLen || v[0] != FormatV1 {
		return Header{}, nil, fmt.Errorf("engine: corrupt document value (%d bytes)", len(v))
	}
	h := Header{
		TS:  int64(binary.BigEndian.Uint64(v[1:9])),
		TTL: ttlindex.DocTTL(int32(binary.BigEndian.Uint32(v[9:13]))),
	}
	return h, v[HeaderLen:], nil
}

// expiryKeyLen is the length of an expiry key before its primary key: the
// family (prefix, collection id, kind) and the instant.
const expiryKeyLen = 1 + 8 + 1 + 8

// ExpiryKey is the entry, in one of the two expiry families, of the
// document at pk of collection collID whose header is h; nil for ttl -1,
// which never expires.
func ExpiryKey(collID uint64, h Header, pk []byte) []byte {
	switch {
	case h.TTL == ttlindex.NoTTL:
		return ttlindex.AppendTSKey(make([]byte, 0, expiryKeyLen+len(pk)), collID, h.TS, pk)
	case h.TTL > 0:
		return ttlindex.AppendOwnKey(make([]byte, 0, expiryKeyLen+len(pk)), collID, h.TS+int64(h.TTL)*1000, pk)
	}
	return nil
}
