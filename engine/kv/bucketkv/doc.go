// Package bucketkv spreads key families whose keys grow in time order over
// buckets, under a kv.Store on a range-sharded backend (TiKV), and hides
// the buckets from everything above: it is itself a kv.Store with the same
// keys, order and semantics.
//
// On a store that splits its key space into ranges (TiKV's regions), a
// family whose new keys are always the largest so far sends every insert
// to the last range of the family, one server at a time: ObjectId _ids in
// the document family, the expiry entries of documents written now, the
// oplog. TiDB answers this with SHARD_ROW_ID_BITS and MongoDB with hashed
// shard keys; this package does the same for the families it is given.
//
// # Layout
//
// A Family names the first byte of its keys and the length of a header
// (the family byte and what groups the keys: a collection's id, say). A key
// K = H R of the family, H its header, is stored as H b R, where the bucket
// b is one byte, a hash of R modulo the number of buckets. Keys outside
// every family, and family keys no longer than their header, are stored as
// they are.
//
// Within one header the stored keys run bucket by bucket, so an iterator
// over a family merges one iterator per bucket, comparing R; across
// headers stored order is the keys' order, so it walks the headers one
// after another, finding each with a probe of the stored keys. A range
// inside one header costs one iterator per bucket; point reads, writes and
// locks cost nothing more.
//
// A walk opens several iterators, so the store's own Iter reads a
// snapshot to stay consistent, as one iterator is. A transaction's walk
// reads as its transaction does: at its start, or for current reads (a
// pessimistic transaction's), each bucket at the time its iterator opens,
// which for the keys the transaction locked is the same.
//
// Subset reads only some of the buckets, one iterator each: processes
// sharing a store divide work on a family that way (engine/reapshare).
//
// The number of buckets is part of the stored layout: Open keeps it in the
// store under LayoutKey, and uses the stored number from then on.
package bucketkv
