// Package transaction keeps the multi-document transactions of logical
// sessions: for each session, its latest transaction number, the state of
// its transaction (none, in progress, committed, aborted), the engine's
// *engine.Transaction while one is open, and when it started and expires.
// It decides, as mongod's TransactionParticipant does
// (src/mongo/db/transaction/transaction_participant.cpp, beginOrContinue,
// _continueMultiDocumentTransaction, _checkIsCommandValidWithTxnState),
// whether a statement may start or continue a transaction, and with which
// error it is refused; the server checks the commands and their fields
// first and runs the statements.
//
// A session is checked out for each command that carries its transaction
// number (Registry.CheckOut), as mongod checks a session out of its
// catalog: a second command on the same session waits, so that an
// engine.Transaction, which serves one statement at a time, is never used
// by two. Aborts that do not come from a command (the lifetime limit,
// killSessions, endSessions, a session's expiry) take the session the same
// way, but never wait: a session that is busy is marked, and its
// transaction is aborted when the running command checks it in.
//
// On a store shared with other servers, a session's numbers may be used
// on any of them; a transaction's statements run on the server that
// started it (drivers pin them to one mongos). Commands that start or end
// a transaction read the session's newest number from the store each
// time, and a commit or abort of a number this server does not hold is
// settled in the store (engine.EndUnknownTransaction): committed, or ended
// there so that the server holding it can no longer commit it.
//
// A collection a transaction creates exists outside it at once, empty; at
// an abort the engine drops one created by create or createIndexes unless
// another client wrote to it meanwhile, and one an insert created stays.
//
// Locks, outermost first:
//   - a session's checkout (Session.slot), held for a whole command, and
//     taken by a command before any engine lock; no command holds two;
//   - Registry.mu, the table of sessions: taken under a checkout, never
//     held while waiting for one or calling the engine;
//   - Session.mu, a leaf: what currentOp and serverStatus read of a
//     session, written under its checkout.
package transaction
