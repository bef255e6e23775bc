package oplog

import "encoding/binary"

// PreImagePrefix is the first byte of every pre-image key. A pre-image is
// the document as it was before the update, replacement or deletion that
// the entry at the same timestamp records, kept for change streams'
// fullDocumentBeforeChange and post-images (MongoDB keeps them in
// config.system.preimages). It is written in the entry's batch, counts
// toward the log's size, and is trimmed with it.
const PreImagePrefix = 'p'

// AppendPreImageKey appends the key of the pre-image of the entry at ts.
func AppendPreImageKey(dst []byte, ts Timestamp) []byte {
	return binary.BigEndian.AppendUint64(append(dst, PreImagePrefix), ts.Uint64())
}

// PreImageRange bounds every pre-image key.
func PreImageRange() (lo, hi []byte) { return []byte{PreImagePrefix}, []byte{PreImagePrefix + 1} }
