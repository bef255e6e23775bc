// Package pebblekv implements kv.Store on an embedded pebble database, the
// default store of a Lethe server. It is the only package that imports
// pebble.
//
// Pebble has no multi-version keys, so the kv semantics are kept in process:
//
//   - Timestamps come from an oracle (oracle.go): hybrid wall-clock
//     milliseconds and a counter. A commit takes its timestamp before its
//     batch is applied; the visible point is the newest timestamp below
//     which every commit is applied, and a snapshot or an optimistic
//     transaction taken now holds every commit at or before it.
//   - Conflicts: the oracle remembers, per hash bucket of keys, the newest
//     commit that wrote one. An optimistic transaction commits only if no
//     key it writes was committed after its start and none is locked by
//     another transaction; a bucket shared by two keys can only make a
//     false conflict, which the caller retries.
//   - Locks (locks.go): one lock per stripe of a hash of the key, a
//     channel so that waits are bounded. Pessimistic transactions hold
//     the stripes of the keys they lock until they end; optimistic ones take
//     the stripes of what they write, without waiting, for the instant of
//     their commit.
//   - A transaction's writes go to an unindexed pebble batch, which is what
//     commits, and to a map that serves its own reads (txn.go). Reads of
//     other keys go to a pebble snapshot taken at Begin (optimistic) or to
//     the latest state (pessimistic: current reads).
//
// The store also keeps the disk from filling up (disk.go: a free-space
// reserve, a ballast file, waits on a full WAL) and simulates a disk for
// tests (MemDisk).
//
// # Locks
//
// From outermost to innermost; none is held while waiting for another:
//
//  1. The lock stripes (lockTable), held by transactions between LockKeys
//     and their end. A transaction waits for stripes only while it holds
//     none, taking them in ascending order, or within the lock wait bound.
//  2. oracle.mu, held to hand out a timestamp and record the commit's keys,
//     and to move the visible point once its batch is applied.
//  3. Leaves: diskGuard.ballastMu, which serializes making and removing
//     the ballast file; diskGuard.closeMu, which orders background work
//     against Close; MemDisk.mu, the simulated disk.
package pebblekv
