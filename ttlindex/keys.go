package ttlindex

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Expiry keys are
//
//	KeyPrefix | collID (8, big-endian) | kind | millis (8) | pk
//
// where millis is big-endian with the sign bit flipped, so that byte order
// is numeric order for negative times too, and pk is the document's primary
// key bytes, opaque here. The fixed-width header lets a range bound stop at
// any millisecond without knowing how primary keys are encoded.

// KeyPrefix is the first byte of every expiry key.
const KeyPrefix byte = 'x'

// The two expiry families a collection keeps for every document.
const (
	// KindTS orders documents without a valid ttl of their own by _ts.
	KindTS byte = 't'
	// KindOwn orders documents with their own ttl (not Never) by the
	// absolute time they expire.
	KindOwn byte = 'o'
)

const (
	familyLen    = 1 + 8 + 1     // prefix, collID, kind
	keyHeaderLen = familyLen + 8 // and millis
)

// AppendTSKey appends to dst the _ts family key of a document.
func AppendTSKey(dst []byte, collID uint64, tsMillis int64, pk []byte) []byte {
	return append(appendMillis(appendFamily(dst, collID, KindTS), tsMillis), pk...)
}

// AppendOwnKey appends to dst the own-ttl family key of a document that
// expires at expireAtMillis.
func AppendOwnKey(dst []byte, collID uint64, expireAtMillis int64, pk []byte) []byte {
	return append(appendMillis(appendFamily(dst, collID, KindOwn), expireAtMillis), pk...)
}

// TSRange returns the bounds [lo, hi) of the _ts family keys of a
// collection whose _ts is at most uptoMillis.
func TSRange(collID uint64, uptoMillis int64) (lo, hi []byte) {
	return familyRange(collID, KindTS, uptoMillis)
}

// OwnRange returns the bounds [lo, hi) of the own-ttl family keys of a
// collection that expire at most at uptoMillis.
func OwnRange(collID uint64, uptoMillis int64) (lo, hi []byte) {
	return familyRange(collID, KindOwn, uptoMillis)
}

// CollRange returns the bounds [lo, hi) of every expiry key of a collection.
func CollRange(collID uint64) (lo, hi []byte) {
	lo = binary.BigEndian.AppendUint64([]byte{KeyPrefix}, collID)
	if collID == math.MaxUint64 {
		return lo, []byte{KeyPrefix + 1}
	}
	return lo, binary.BigEndian.AppendUint64([]byte{KeyPrefix}, collID+1)
}

// ParseKey splits an expiry key. The returned pk aliases k.
func ParseKey(k []byte) (collID uint64, kind byte, millis int64, pk []byte, err error) {
	if len(k) < keyHeaderLen || k[0] != KeyPrefix {
		return 0, 0, 0, nil, fmt.Errorf("ttlindex: malformed expiry key %x", k)
	}
	kind = k[familyLen-1]
	if kind != KindTS && kind != KindOwn {
		return 0, 0, 0, nil, fmt.Errorf("ttlindex: expiry key %x has unknown kind %q", k, kind)
	}
	collID = binary.BigEndian.Uint64(k[1:])
	millis = int64(binary.BigEndian.Uint64(k[familyLen:]) ^ signBit)
	return collID, kind, millis, k[keyHeaderLen:], nil
}

func familyRange(collID uint64, kind byte, uptoMillis int64) (lo, hi []byte) {
	lo = appendFamily(make([]byte, 0, familyLen), collID, kind)
	if uptoMillis == math.MaxInt64 {
		return lo, appendFamily(make([]byte, 0, familyLen), collID, kind+1)
	}
	// Every key at uptoMillis, whatever its pk, sorts before the bare header
	// of the next millisecond.
	return lo, appendMillis(appendFamily(make([]byte, 0, keyHeaderLen), collID, kind), uptoMillis+1)
}

func appendFamily(dst []byte, collID uint64, kind byte) []byte {
	dst = append(dst, KeyPrefix)
	dst = binary.BigEndian.AppendUint64(dst, collID)
	return append(dst, kind)
}

const signBit = 1 << 63

func appendMillis(dst []byte, millis int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(millis)^signBit)
}
