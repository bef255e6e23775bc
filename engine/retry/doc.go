// Package retry keeps the records of retryable writes: for each session,
// its newest transaction number and the result of each statement that
// committed under it, so that a retry of the statement returns that
// result instead of running again, also after a restart.
//
// The engine writes a statement's record in the kv transaction of the
// write itself (Record), so the record exists exactly when the write
// committed; everything else reads or deletes records in the store it is
// given. Results are encoded from plain values, so the package needs none
// of the engine's types and never imports it.
package retry
