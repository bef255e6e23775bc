// Package storagecheck is the validate command's check of a collection's
// storage against itself: every stored document parses and has exactly
// the index and expiry entries its contents call for, every entry belongs
// to a document that calls for it, and documents the validator refuses
// are counted.
//
// It reads one kv.Snapshot the engine takes and a description of the
// collection as of that snapshot (Collection), so it never imports the
// engine; the engine's Validate takes the snapshot under the collection's
// lock and reports the Result.
package storagecheck
