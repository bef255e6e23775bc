// Package record is the engine's storage format: the layout of its key
// space and the encoders of what it stores, as pure functions of bytes and
// BSON. It reads and writes no store; the engine (package engine) does, in
// kv transactions, with the keys and values made here. Keeping the format
// apart lets it be read, tested and changed in one place, and keeps the
// engine root to the catalog, the write and read paths.
//
// Key space (one ordered store; prefix bytes keep the families apart, ids
// are fixed-width big-endian):
//
//	c "coll" 0 db 0 name        catalog entry of a collection (BSON; CatalogKey)
//	c "seq"                     the last id handed out to a collection or index
//	c "ver"                     the catalog's version (CatalogVersionKey)
//	c "param" 0 "cs"            the change stream options (ChangeStreamOptionsKey)
//	d collID keycodec(_id)      Header + the user's BSON (DocKey, AppendHeader)
//	i indexID keycodec(values)  [+ keycodec(_id) unless unique] -> keycodec(_id)
//	                            (Index.EntryKey, Index.Keys)
//	x ...                       expiry families, laid out by package ttlindex
//	                            -> the document's {_id}; empty if stored by
//	                            an older build (engine/ttl.go, purgeByEntries)
//	o ts                        oplog entries, laid out by package oplog
//	p ts                        pre-images of update and delete entries, likewise
//	t lsid 0x00                 a session's newest txnNumber and last write
//	t lsid 0x02 stmt            a retryable statement's txnNumber and result
//	                            (TxnHeaderKey, TxnStmtKey; why in engine/retry.go)
//	t lsid 0x03                 never written: locked to check a session out
//	                            across servers (TxnCheckoutKey, engine/retry)
//	r lo -> hi                  ranges of dropped collections and indexes
//	                            still to reclaim (ReclaimKey; engine/reclaim.go)
//	y slot(2)                   the lease of a slot of the TTL reaper's work on
//	                            a shared store: holder and expiry (BSON;
//	                            engine/reapshare)
//
// The primary key keycodec(_id) is that of the _id's collation key in a
// collection created with a default collation (the engine's collMeta
// CollatedID): mongod's _id index has the collection's collation, so _id
// values equal under it are one key.
//
// The value of an index entry is the primary key of its document, so index
// scans reach the document without decoding the entry key. This differs from
// the design sketch (empty values) because it lets unique entries leave the
// _id out of the key, making the uniqueness check a single Get.
//
// Documents carry a header with the system _ts and the parsed document ttl, so
// that visibility under TTL is decided without parsing BSON, and changes to
// the collection's TTL setting take effect without rewriting any document.
//
// Stored BSON is checked for conformance (ConformantBSON) only by the
// validate command: writes store what clients send, as mongod does.
//
// Index keys are generated the way MongoDB's btree key generator makes them
// (Index.Generate): arrays expand into one key per element, parallel arrays
// and ambiguous positional paths are refused with MongoDB's codes. A hashed
// field keeps MongoDB's hash of its value, an int64 (hashed.go); a text
// index keeps one entry per term of a document: the values before the text,
// the term, its score, the values after (textkeys.go). The key of a
// "2dsphere" or "2d" field is an int64 per cell of its shape: an S2 cell
// id, or a hash of the plane (geokeys.go, package geo), so that a geo query
// reads the ranges of its covering's cells.
package record
