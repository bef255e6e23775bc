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
// # Several servers on one store
//
// When several servers append to one stored log (Share), timestamps come
// from the store's timestamp oracle (TiKV's TSO) rather than this
// process's clock: FromTSO maps an oracle timestamp to a BSON one that
// orders the same way, with 16 slots for the entries of one batch (and
// another oracle timestamp for every 16 more), so that two servers never
// hand out one timestamp, and a write acknowledged on one server before
// another starts on a second gets the smaller. A server cannot see what
// the others have reserved, so each publishes its floor through the
// Cluster (the roster record of package engine/members): the lowest
// timestamp it may still commit at, which is the first of its oldest
// unfinished reservation, else a fresh oracle timestamp. RunShared
// publishes it while the server appends, every SharedInterval and soon
// after each commit, and reads the others': the visible point is just
// below the lowest of them and of its own, taken before the read, and
// nothing is visible before the first read. A server with nothing to commit
// publishes a zero floor after a second of idleness, which readers skip,
// and publishes a real floor again before its next append takes a
// timestamp: every reader that saw the zero read below its own fresh
// timestamp, and the append's comes after the publication, hence after
// that one. A server whose lease ran out is off the roster, and its floor
// with it; it commits nothing more (the engine checks its lease before
// each commit).
//
// # Locks
//
// shared.pubMu, held by a publication of the floor across its store call
// (an append that must publish first takes it, under the engine's locks),
// then Log.mu, a leaf held for a few statements; trimMu, held by a trim,
// takes mu briefly.
//
// # Keys
//
//	o ts(8)    one entry (BSON), ts as seconds<<32 | increment, big-endian
//	p ts(8)    the pre-image (BSON) of the update or delete entry at ts, for
//	           collections with changeStreamPreAndPostImages; removed with
//	           the entries when the log is trimmed
package oplog
