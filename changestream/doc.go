// Package changestream turns oplog entries into MongoDB change events and
// knows their resume tokens: what a $changeStream aggregate and its getMores
// read.
//
// A Stream follows the oplog from a start point through a Source, the small
// part of the engine it needs (reading entries, their oldest, waiting for
// new ones, looking up a document), so that the package does not depend on
// the engine. It turns each visible entry on its namespace into zero or
// more events (an entry that drops a watched collection gives a drop and an
// invalidate), in oplog order, and hands them out in batches.
//
// # Resume tokens
//
// An event's _id is {_data: hex} where the bytes are
//
//	version(1) ts(8) index(4) flags(1) uuid(16)
//
// ts is the entry's timestamp, index the event's place among the events of
// that entry, flags mark an invalidate (fromInvalidate) and a high-water
// mark (a postBatchResumeToken that names no event, only "everything up to
// ts was seen"), and uuid is the collection's, zeros when the event has
// none. Tokens therefore survive restarts: they name oplog positions, which
// are stored. Resuming from an event's token checks that the stream still
// produces that very event at that position, as MongoDB does, which refuses
// a token taken from another collection's stream.
package changestream
