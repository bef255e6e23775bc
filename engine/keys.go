package engine

import (
	"encoding/binary"
)

const (
	prefixCatalog = 'c'
	prefixDoc     = 'd'
	prefixIndex   = 'i'
)

// appendID appends an 8-byte big-endian id.
func appendID(dst []byte, id uint64) []byte { return binary.BigEndian.AppendUint64(dst, id) }

// docKey is the key of the document with primary key pk.
func docKey(dst []byte, collID uint64, pk []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, 1+8+len(pk))
	}
	dst = append(dst, prefixDoc)
	dst = appendID(dst, collID)
	return append(dst, pk...)
}

// docRange bounds every document of a collection.
func docRange(collID uint64) (lo, hi []byte) {
	return appendID([]byte{prefixDoc}, collID), appendID([]byte{prefixDoc}, collID+1)
}

// pkOfDocKey returns the primary key part of a document key.
func pkOfDocKey(k []byte) []byte { return k[1+8:] }

// indexPrefix is the common prefix of an index's entries.
func indexPrefix(dst []byte, indexID uint64) []byte {
	return appendID(append(dst, prefixIndex), indexID)
}

// indexRange bounds every entry of an index.
func indexRange(indexID uint64) (lo, hi []byte) {
	return indexPrefix(nil, indexID), indexPrefix(nil, indexID+1)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// keySuccessor returns the smallest key greater than k.
func keySuccessor(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}
