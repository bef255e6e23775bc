package oplog

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Timestamp is a cluster time: a BSON Timestamp of seconds since the epoch
// and an increment that orders the entries of one second.
type Timestamp struct {
	T uint32 // seconds
	I uint32 // increment
}

// Uint64 packs ts so that integer order is timestamp order.
func (ts Timestamp) Uint64() uint64 { return uint64(ts.T)<<32 | uint64(ts.I) }

// FromUint64 unpacks what Uint64 packed.
func FromUint64(v uint64) Timestamp { return Timestamp{T: uint32(v >> 32), I: uint32(v)} }

// Less reports whether ts is before o.
func (ts Timestamp) Less(o Timestamp) bool { return ts.Uint64() < o.Uint64() }

// IsZero reports whether ts is the zero timestamp, before every entry.
func (ts Timestamp) IsZero() bool { return ts == Timestamp{} }

// Prev is the timestamp right before ts; ts itself if it is zero.
func (ts Timestamp) Prev() Timestamp {
	if ts.IsZero() {
		return ts
	}
	return FromUint64(ts.Uint64() - 1)
}

// Next is the timestamp right after ts.
func (ts Timestamp) Next() Timestamp { return FromUint64(ts.Uint64() + 1) }

func (ts Timestamp) String() string { return fmt.Sprintf("Timestamp(%d, %d)", ts.T, ts.I) }

// Prefix is the first byte of every oplog key.
const Prefix = 'o'

// KeyLen is the length of an entry's key.
const KeyLen = 1 + 8

// AppendKey appends the key of the entry at ts.
func AppendKey(dst []byte, ts Timestamp) []byte {
	return binary.BigEndian.AppendUint64(append(dst, Prefix), ts.Uint64())
}

// KeyTS returns the timestamp of an entry key.
func KeyTS(k []byte) (Timestamp, error) {
	if len(k) != KeyLen || k[0] != Prefix {
		return Timestamp{}, fmt.Errorf("oplog: malformed key %x", k)
	}
	return FromUint64(binary.BigEndian.Uint64(k[1:])), nil
}

// IsEntryKey reports whether k is the key of an oplog entry.
func IsEntryKey(k []byte) bool { return len(k) == KeyLen && k[0] == Prefix }

// Range bounds every entry key.
func Range() (lo, hi []byte) { return []byte{Prefix}, []byte{Prefix + 1} }

// nextAfter returns the first of n consecutive timestamps after last, in
// the second of now when that is later: strictly increasing whatever the
// clock does, as MongoDB's cluster time is.
func nextAfter(last Timestamp, now time.Time, n int) Timestamp {
	secs := uint32(max(now.Unix(), 0))
	if secs > last.T {
		return Timestamp{T: secs, I: 1}
	}
	if uint64(last.I)+uint64(n) > math.MaxUint32 {
		return Timestamp{T: last.T + 1, I: 1}
	}
	return Timestamp{T: last.T, I: last.I + 1}
}
