// Package tikvkv implements kv.Store on TiKV, through
// github.com/tikv/client-go/v2 (the only package that imports it): the
// store of Lethe front-ends that share one distributed, transactional key
// space instead of each owning a pebble directory. Open connects to a real
// cluster through its PD endpoints; OpenMock and MockCluster run on
// client-go's in-process mock (an MVCC store, a mock PD and its TSO), for
// tests.
//
// kv's semantics were written to be TiKV's, so the mapping is direct and
// keeps no state of its own beyond one transaction's bookkeeping; no
// in-process lock carries correctness, every guarantee is the cluster's:
//
//   - Keys: every key lives under Options.Prefix P ("lethe/" by default),
//     so several deployments can share a cluster: kv's key K is stored at
//     P "k" K; the prefix is added on the way in and cut off the keys
//     iterators return.
//   - Values: client-go's transaction buffer takes an empty value for a
//     deletion, and kv has empty values, so a stored value that is empty or
//     starts with a zero byte gets one zero byte in front (value.go).
//   - Chunks: a value longer than 1 MiB (chunkSize) is stored in chunks
//     of 1 MiB at P "c" escape(K) seq, seq a 4-byte big-endian count from
//     0, and K holds its head: the bytes 0 1 (a stored value no inline one
//     starts with), then the value's length and its number of chunks, as
//     uvarints. escape writes a zero byte as 0 0xff and ends with 0 1, so
//     chunk keys sort as their keys do and no key's are a prefix of
//     another's: the chunks of the keys in [lo, hi) are one range, which
//     DropRange deletes with the keys. A value is written with all its
//     chunks in one transaction, and read from the same snapshot as its
//     head (chunkReadGroup chunks per request); iterators walk the keys
//     only and join a chunked value when they reach it. Replacing or
//     deleting a chunked value must delete the chunks its successor does
//     not overwrite, so a transaction keeps the chunk counts of the keys it
//     read (for current reads, only those it had locked) and wrote; for a
//     key it wrote without knowing them, Commit reads the heads first, in
//     one read-committed batch, and deletes the leftover chunks with the
//     rest (txn.go, dropBlindChunks, says what that read may miss: chunks
//     no head points to, never a value read wrong). Locks, conflicts and the engine's
//     keys are the heads': a pessimistic transaction writes chunks
//     unlocked, as keys derived from their locked head.
//   - Timestamps are the TSO's. Now takes a fresh one; Snapshot and the
//     Store's own reads read at a fresh one; a transaction starts at one;
//     Commit returns the commit timestamp of the two-phase commit (both
//     durabilities commit the same way: a TiKV commit is replicated).
//   - Optimistic transactions are client-go's: reads at the start
//     timestamp over the transaction's buffer, conflicts found at
//     prewrite. A prewrite that meets another transaction's lock first lets
//     client-go resolve it (a lock of a dead transaction is rolled back or
//     committed), and if the lock is alive the commit fails as a conflict
//     at once rather than waiting for it (txn.go, lockWatch). A
//     pessimistic transaction's commit waits such a lock out, as TiKV
//     does: its unlocked keys are not checked for conflicts.
//   - Pessimistic transactions lock with LockKeys at a for_update_ts. Their
//     reads are current reads: each Get or Iter reads at a fresh TSO
//     timestamp, which holds every commit acknowledged before it; a key the
//     transaction locked cannot change after its lock, so a read after the
//     lock sees its latest value. A lock met on a key committed after the
//     for_update_ts (TiKV's write conflict) is taken again at a fresh one:
//     the transaction only ever wanted the latest value. This is what TiDB
//     does for a statement in a pessimistic transaction.
//   - Snapshot transactions (SnapshotReads) read at the start timestamp and
//     lock at for_update_ts = start, so a key committed after the start is
//     TiKV's write conflict on the lock: ErrConflict.
//   - Lock waits are TiKV's (LockCtx.LockWaitTime, bounded by
//     TxnOptions.LockWait and the context's deadline); NoWait is
//     LockNoWait, whose failure is kv.ErrLocked. Write conflicts, lock wait
//     timeouts, deadlocks and live locks met at commit match ErrConflict.
//   - DropRange is TiKV's DeleteRange: every version of every key in the
//     range goes at once, outside any transaction, as kv allows. The
//     engine calls it for a dropped collection only once VersionLifetime
//     (GCLifetime) has passed since the drop (kv.Sharded).
//   - Old versions: TiKV deletes those below the cluster's GC safe point,
//     which TiDB's GC worker advances for TiDB. A Store opened on a
//     cluster advances it itself, to GCLifetime (10 minutes) before now
//     every 10 minutes, after resolving the locks below (gc.go).
//   - ApproximateSize of a range over more than two regions is PD's:
//     the approximate sizes TiKV reports of those regions, read from PD's
//     HTTP API (regionstats.go; client-go's PD client offers none). A
//     smaller range, which PD would size as its whole regions, and any
//     range on the mock, which keeps no statistics, is sized logically:
//     the bytes of its keys and values, read at a fresh timestamp.
//
// Region errors, lock resolution and retries stay inside client-go.
//
// # Limits
//
// A TiKV write request is bounded by the cluster's raft-entry-max-size
// (8 MiB by default, which the mock enforces) and an answer by its gRPC
// message bound (10 MiB): chunks keep every value's share of one under
// 4 MiB, so MongoDB's 16 MiB documents, and longer values, are stored.
// The cost is a read of the heads of the keys a transaction writes
// without having read them (index entries, oplog entries), one batched
// read per commit, and for a chunked value one more read per 4 MiB.
//
// # The mock
//
// MockCluster differs from TiKV where it matters to this package, and the
// package works around it only where the workaround is right on TiKV too:
//
//   - A call whose context ended poisons the mock's store in client-go's
//     region cache, for good: the mock never sees cancellation (mock.go).
//   - Its prewrite checks every key of a pessimistic transaction for
//     commits after the transaction's start, where TiKV checks none. A
//     current-read transaction therefore restarts at its first lock's
//     timestamp while it holds nothing (txn.go), and on the mock only,
//     one that holds locks takes more at its start, so that a key
//     committed since is a conflict at the lock rather than at the
//     commit. Keys written unlocked can still meet spurious conflicts on
//     the mock, which callers retry as any conflict.
//   - It keeps no region statistics, and serves no CDC feed.
package tikvkv
