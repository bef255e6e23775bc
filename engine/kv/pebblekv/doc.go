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
//     false conflict, which the caller retries. Snapshot transactions
//     (pessimistic with SnapshotReads) live longer, so the oracle keeps an
//     exact history for them: while one is open, every commit records its
//     keys; the history before the oldest open start is pruned, and it is
//     bounded (maxRecent), past which the open ones conflict and retry.
//   - Locks (locks.go): one lock per exact key, in a sharded table; a
//     waiter sleeps on a channel the holder closes, so that waits are
//     bounded. Pessimistic transactions hold the keys they lock until they
//     end; optimistic ones take the keys they write, without waiting, for
//     the instant of their commit.
//   - A transaction's writes go to an unindexed pebble batch, which is what
//     commits, and to a map that serves its own reads (txn.go). Reads of
//     other keys go to a pebble snapshot taken at Begin (optimistic, and
//     snapshot transactions) or to the latest state (pessimistic: current
//     reads).
//   - Views (view.go, kv.Viewer) are snapshots for reads that end within a
//     request: one pebble iterator, whose view is fixed when it is made,
//     rather than a pebble snapshot, whose release runs a compaction check
//     under pebble's DB mutex.
//
// The store also keeps the disk from filling up (disk.go: a free-space
// reserve, a ballast file, waits on a full WAL) and simulates a disk for
// tests (MemDisk). Where pebble's cache and memtables are C allocations
// (cgo on glibc), malloc_glibc.go tunes malloc so that memory pebble frees
// returns to the system.
//
// # Locks
//
// From outermost to innermost; none is held while waiting for another:
//
//  1. The key locks (lockTable), held by transactions between LockKeys
//     and their end. A transaction waits for keys only while it holds
//     none, taking them in ascending order, or within the lock wait bound.
//     lockShard.mu guards one shard of the table for an instant and is
//     never held while waiting.
//  2. oracle.mu, held to hand out a timestamp and record the commit's keys,
//     and to move the visible point once its batch is applied.
//  3. Leaves: view.mu, which lets one view's iterator serve concurrent
//     readers; diskGuard.ballastMu, which serializes making and removing
//     the ballast file; diskGuard.closeMu, which orders background work
//     against Close; MemDisk.mu, the simulated disk.
package pebblekv
