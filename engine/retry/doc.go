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
//
// On a store shared by several servers, the records are what every server
// answers from: a commit's record and the record of a transaction number
// another server ended (outcome.go), and a session's checkout, which runs
// its retryable writes one at a time across servers (CheckOut).
//
// Locks, outermost first, each in a kv transaction of its own:
//   - a session's checkout key (TxnCheckoutKey): held by a server for the
//     length of a retryable write of the session (CheckOut), whose own kv
//     transaction writes the session's records without further locks;
//     taken by EndUnknown and Forget before the header, waiting;
//   - the session's header key (TxnHeaderKey): taken by EndUnknown and
//     Forget, waiting, and by a transaction's commit on a shared store
//     (CheckCommit) without waiting, its kv transaction holding others.
//
// No one holding a header waits for a checkout, and a retryable write
// never waits for either while its kv transaction holds document locks.
package retry
