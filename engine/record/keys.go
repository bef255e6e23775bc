package record

import (
	"encoding/binary"

	"github.com/lethedb/lethe/engine/kv"
)

// The first bytes of the key families (the package doc lists them all);
// the expiry, oplog and pre-image families are laid out by packages
// ttlindex and oplog.
const (
	PrefixCatalog = 'c'
	PrefixDoc     = 'd'
	PrefixIndex   = 'i'
	PrefixTxn     = 't'
	PrefixReclaim = 'r'
)

// CatalogKey is the key of the catalog entry of collection db.name.
func CatalogKey(db, name string) []byte {
	k := CatalogCollPrefix()
	k = append(k, db...)
	k = append(k, 0)
	return append(k, name...)
}

// CatalogCollPrefix is the common prefix of the collections' catalog
// entries.
func CatalogCollPrefix() []byte { return append([]byte{PrefixCatalog}, "coll\x00"...) }

// CatalogVersionKey is the key of the catalog's version: every catalog
// change on a store shared by several servers locks it and advances it, so
// that the changes are ordered and each server can tell it is behind.
func CatalogVersionKey() []byte { return []byte{PrefixCatalog, 'v', 'e', 'r'} }

// SeqKey is the key of the last id handed out to a collection or index.
func SeqKey() []byte { return []byte{PrefixCatalog, 's', 'e', 'q'} }

// ChangeStreamOptionsKey is the key of the cluster's change stream
// options (the changeStreamOptions cluster parameter).
func ChangeStreamOptionsKey() []byte {
	return []byte{PrefixCatalog, 'p', 'a', 'r', 'a', 'm', 0, 'c', 's'}
}

// TxnSessionPrefix is the common prefix of a session's retryable-write
// records.
func TxnSessionPrefix(s [16]byte) []byte { return append([]byte{PrefixTxn}, s[:]...) }

// TxnHeaderKey is the key of a session's header record: its newest
// transaction number and when it last wrote.
func TxnHeaderKey(s [16]byte) []byte { return append(TxnSessionPrefix(s), 0) }

// stmtTag tags statement records; 0x01 tagged those of an earlier layout.
const stmtTag = 2

// TxnStmtKey is the key of the record of statement stmt of a session.
func TxnStmtKey(s [16]byte, stmt int32) []byte {
	k := append(TxnSessionPrefix(s), stmtTag)
	return binary.BigEndian.AppendUint32(k, uint32(stmt))
}

// TxnStmtRange spans a session's statement records, of either layout.
func TxnStmtRange(s [16]byte) (lo, hi []byte) {
	return append(TxnSessionPrefix(s), 1), append(TxnSessionPrefix(s), stmtTag+1)
}

// TxnCheckoutKey is the key servers sharing a store lock, and never
// write, to run a session's retryable writes one at a time.
func TxnCheckoutKey(s [16]byte) []byte { return append(TxnSessionPrefix(s), stmtTag+1) }

// ReclaimKey is the key of the record of a dropped range [lo, hi) still to
// reclaim; its value is hi.
func ReclaimKey(lo []byte) []byte { return append([]byte{PrefixReclaim}, lo...) }

// AppendID appends an 8-byte big-endian id.
func AppendID(dst []byte, id uint64) []byte { return binary.BigEndian.AppendUint64(dst, id) }

// DocKey is the key of the document with primary key pk.
func DocKey(dst []byte, collID uint64, pk []byte) []byte {
	if dst == nil {
		dst = make([]byte, 0, 1+8+len(pk))
	}
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

// PrefixEnd returns the smallest key greater than every key with prefix p
// (kv.PrefixEnd).
func PrefixEnd(p []byte) []byte { return kv.PrefixEnd(p) }

// KeySuccessor returns the smallest key greater than k.
func KeySuccessor(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}
