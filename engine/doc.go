// Package engine is Lethe's document store: the catalog, document and index
// storage, query execution, writes and cursors, on a transactional
// key-value store (package kv; pebble by default, package pebblekv).
//
// The key space and the layout of stored values (documents with their
// header, index entries, catalog keys) are package engine/record's, whose
// doc lists the key families; the engine writes them in kv transactions.
//
// Concepts that need nothing of the engine's state live in packages of
// their own below it, which it imports and which never import it:
// engine/record (the storage format), engine/letvars (a command's let),
// engine/validation (collection validators), engine/usage ($collStats and
// $indexStats counters), engine/namespace (the rules of names),
// engine/viewdef (view definitions and the graph of views),
// engine/preimage (change streams' pre-images: their collection option,
// the changeStreamOptions parameter and their expiry), engine/retry (the
// records of retryable writes), engine/reclaim (freeing the keys of
// dropped collections and indexes), engine/writestage ($out and $merge),
// engine/storagecheck (validate's check of a collection's storage),
// engine/oplogstore (the stored oplog's reads and deletes),
// engine/expiryscan (the scans that find expiring documents),
// engine/collstats (the documents of collStats, $collStats and
// $indexStats) and engine/distinct (the set of distinct values). Those
// that touch the store are handed a kv.Store, a kv.Txn, a snapshot or a
// small interface the engine implements.
//
// Every exported method that reads or writes the store or the catalog
// takes a context.Context first, since on a distributed store each call may
// be network I/O; the statement's transaction, if any, travels in it too
// (WithTransaction, transaction.go), and so does the collation a command
// names (WithCollation, collate.go), else the collection's default applies. Only accessors of in-process state do
// without one: Reaper, Clock, Oplog, ClusterTime, ChangeStreamOptions,
// RecordLatency, SetSnapshotHistory and Close.
//
// Every write is a kv transaction. A write command runs through a writer
// (write.go): one pessimistic transaction per chunk of at most maxBatchOps
// documents or maxBatchBytes, which locks the keys whose uniqueness it
// checks (a document's key, its unique index entries) before reading them,
// reads its own pending writes, and commits with a WAL sync. With
// Options.Oplog, a write's oplog entries are set in the transaction of the
// write itself at its commit (commitLogged), so that the log never misses a
// committed write nor holds one that failed. A retryable write's
// statements record their results in that transaction too (package
// engine/retry), and so do the pre-images of a collection with
// changeStreamPreAndPostImages (oplog.go; package engine/preimage reads
// and expires them).
//
// # Locks
//
// From outermost to innermost; a goroutine that holds one may take only
// those after it, and never waits for one it holds:
//
//  0. Engine.viewMu, which serializes changes of the views (views.go): it
//     is held from the checks of a definition through the write of its
//     document in system.views to the swap of the in-memory entry, and
//     while system.views is dropped.
//  1. Collection.ddl, one RWMutex per collection. Writes (insert, update,
//     findAndModify, delete) and reaper passes share it for the whole
//     request; catalog changes that must not interleave with writes take it
//     exclusively (drop, rename, createIndexes, dropIndexes, collMod). A
//     request takes the ddl lock of one collection only, once: a read lock
//     taken again would wait behind a queued catalog change. A statement of
//     a multi-document transaction, which holds key locks across
//     statements, waits for it at most the transaction's lock timeout, and
//     its commit takes those of the collections it wrote without waiting
//     longer (transaction.go). On a shared store a change that fences its
//     collections (fence.go) releases their ddl locks while it waits for
//     the other servers to install the fence, and takes them again in the
//     same order; writers, and other fencing changes, of a fenced
//     collection wait for the fence to go holding no lock.
//  2. The key locks of the writer's kv transaction (kv.Txn.LockKeys; on
//     pebble, exact key locks). A writer (one per request, never two at
//     once) waits only while it holds no lock; once it holds some it takes
//     more without waiting (LockOptions.NoWait), and when one is busy it
//     commits, releases all and waits for the union. A statement of a
//     multi-document transaction never waits for a key: one another holds
//     is WriteConflict. An upsert inserts through the writer that saw the
//     miss, so the lock of the missing key stays held and is never waited
//     for a second time.
//  3. Collection.metaMu, which orders read-modify-writes of a collection's
//     catalog entry (updateMeta), for example a writer marking an index
//     multikey while it holds its key locks.
//  4. Engine.mu, which guards the map of open collections (and the ids of
//     those dropped here, gone): held only for map access and the catalog
//     commit of create and rename; the only locks it waits for are the
//     catalog version's and the id sequence's.
//  5. On a store shared with other servers, the catalog version's key lock
//     (beginCatalog, cluster.go), held by the short transaction of one
//     catalog change, which waits for nothing else while it holds it but
//     the id sequence's; a writer marking an index multikey takes it while
//     it holds key locks, which is safe as no holder waits for those. The
//     refresh of the catalog (refreshLoop) takes ddl locks (1) and
//     Engine.mu, then viewMu to read the views again, holding none of
//     these while it waits for another.
//     The id sequence's key lock (allocIDs), held by a short transaction
//     that reads, advances and commits the stored sequence and waits for
//     nothing while it holds it.
//  6. On a store shared with other servers, the oplog's publication lock
//     (oplog's shared.pubMu), taken by an append whose server has no
//     floor published (under the locks above, engine.mu included) and by
//     the floor loop, and held across the publication: a renewal of the
//     server's roster record (members' renewMu, then its mu).
//  7. Leaf locks, held for a few statements and never while taking another:
//     oplog.Log's mu, taken to hand out timestamps and append entries to
//     a batch (under engine.mu for create and rename) and to publish a
//     commit; oplog.Log's trimMu, held by a trim, which takes mu briefly;
//     the cache of collators (collatorCache.mu, collate.go), held for a
//     map read or write; the reaper's share (reapShare.mu, ttlshare.go),
//     held to read or set the slots held; and the store's own (package pebblekv lists them), taken inside kv
//     calls and never held across them.
//
// Usage counters ($collStats latency and collection scans, $indexStats
// accesses; package engine/usage) are atomics and a sync.Map on the
// Collection, taken by no lock.
//
// Readers take engine.mu only to look a collection up: a collection's state
// is an immutable snapshot swapped atomically, and the store gives each
// read a consistent view (an index scan reads one kv.Snapshot). Cursors notice between batches that their collection was
// dropped or renamed, or their index dropped.
package engine
