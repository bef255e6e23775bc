// Package oplog is Lethe's operation log: the entry format, in the shape of
// MongoDB's local.oplog.rs, the cluster time that orders entries, the key
// family entries are stored under, and the bookkeeping that tells readers
// (change streams, local.oplog.rs cursors) which entries are safe to read and
// when new ones arrive.
//
// The package knows nothing of the engine or of pebble: the engine hands it
// a Batch to append to (the same batch as the write the entries describe,
// so a write and its entries commit or vanish together) and a Store to trim.
//
// # Order and visibility
//
// Timestamps are handed out under one mutex in increasing order, but the
// batches holding them commit concurrently, so a batch with a later
// timestamp may commit first. A reader that has seen that later entry must
// not skip the earlier one when it commits. Log therefore tracks the
// reservations that have not finished and publishes a visible point: the
// greatest timestamp at or below which every reservation has committed or
// failed (a failed one leaves a hole, never an entry). Readers read up to
// the visible point only, and Wait until it moves.
//
// # Keys
//
//	o ts(8)    one entry (BSON), ts as seconds<<32 | increment, big-endian
//	p ts(8)    the pre-image (BSON) of the update or delete entry at ts, for
//	           collections with changeStreamPreAndPostImages; removed with
//	           the entries when the log is trimmed
package oplog
