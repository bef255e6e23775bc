// Package preimage keeps the pre-images of change streams: the collection
// option that turns them on, the changeStreamOptions cluster parameter
// that bounds how long they are kept, the read of one and their expiry.
//
// The pre-images themselves are written by the engine, in the transaction
// of the update or delete that made them, and trimmed with the oplog they
// belong to (package oplog keys them). What this package adds is the
// parameter and the rule it sets: it reads and writes the store only
// through Host, which the engine implements, so it never imports the
// engine.
package preimage
