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
// # Transactions
//
// A committed transaction is one applyOps entry on admin.$cmd (see
// oplog.ApplyOps). It gives one event per operation on a watched
// namespace, in the order of the array, each with the entry's clusterTime
// and wallTime and, as MongoDB's, the transaction's txnNumber and lsid
// (when the entry has them), which ordinary events lack. A batch may end
// among them: the rest stay pending for the next one.
//
// # Images
//
// fullDocumentBeforeChange is the pre-image the engine stored with the
// entry (Source.PreImage), and the post-image of fullDocument
// whenAvailable and required is that pre-image with the entry's update
// applied: the document right after the update, as MongoDB computes it,
// not as it is when the event is read (updateLookup). An operation of a
// transaction has no stored pre-image: it is missing, so both images are
// null with whenAvailable and an error with required; updateLookup works
// as for any update.
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
//
// An event of a transaction has the commit's ts and, as index, its
// operation's place in the applyOps array: MongoDB's txnOpIndex, counted
// over all the operations, watched or not, so that a token names the same
// operation in every stream. An operation gives at most one event, so the
// index needs no other field, and tokens kept from before transactions
// mean what they meant.
//
// # Expire events
//
// A stream with showExpireEvents also reports each watched document's
// expiry at its instant (see the README). Its position is then a pair: the
// oplog timestamp read up to, and the expiry position (instant, then
// "ns\x00" and the _id's key), up to which expire events were handed out.
// Both only grow along the stream: oplog events come in oplog order, expire
// events in expiry order, each expire event of a purged document just
// before that purge's delete, and the others after the oplog entries read
// before the stream looked at the clock. So one event follows another
// exactly when it is past it in one of the two and not behind in the
// other, and a token carrying both resumes without repeating or losing
// either kind.
//
// Such a stream's tokens are version 2: version 1's fields, then the
// expiry instant (8 bytes) and, on an expire event, its place in that
// instant. An expire event's token carries the oplog timestamp the stream
// had read to when it was emitted (the one just before the purge it
// precedes), with flag expire; resuming from it reads the oplog after
// that timestamp and the expiries after its position. Version 1 tokens
// still resume such a stream, from the clock's now.
package changestream
