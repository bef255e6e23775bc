// Package oplogstore is the oplog as the engine's kv store holds it: the
// entries' and pre-images' key ranges (laid out by package oplog) read at
// open, forwards and backwards, trimmed, and found by a find over
// local.oplog.rs.
//
// Package oplog hands out timestamps, appends entries in the writes'
// transactions and decides what to trim; this package is the other half,
// the reads and deletes of those ranges in a kv.Store. The engine imports
// it and it never imports the engine.
package oplogstore
