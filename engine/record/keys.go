package record

import (
	"encoding/binary"
)

const (
	PrefixCatalog = 'c'
	PrefixDoc     = 'd'
	PrefixIndex   = 'i'
)

// AppendID appends an 8-byte big-endian id.
func AppendID(dst []byte, id uint64) []byte { return binary.BigEndian.AppendUint64(dst, id) }

// DocKey is the key of the document with primary key pk.
func DocKey(dst []byte, collID uint64, pk []byte) []byte {
	dst = append(dst, PrefixDoc)
	dst = AppendID(dst, collID)
	return append(dst, pk...)
}

// DocRange bounds every document of a collection.
func DocRange(collID uint64) (lo, hi []byte) {
	return AppendID([]byte{PrefixDoc}, collID), AppendID([]byte{PrefixDoc}, collID+1)
}

// PKOfDocKey returns the primary key part of a document key.
func PKOfDocKey(k []byte) []byte { return k[1+8:] }

// IndexPrefix is the common prefix of an index's entries.
func IndexPrefix(dst []byte, indexID uint64) []byte {
	return AppendID(append(dst, PrefixIndex), indexID)
}

// IndexRange bounds every entry of an index.
func IndexRange(indexID uint64) (lo, hi []byte) {
	return IndexPrefix(nil, indexID), IndexPrefix(nil, indexID+1)
}

// PrefixEnd returns the smallest key greater than every key with prefix p.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// KeySuccessor returns the smallest key greater than k.
func KeySuccessor(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}
