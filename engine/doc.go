// Package engine is Lethe's document store on pebble: the catalog, document
// and index storage, query execution, writes and cursors.
//
// Key space (one pebble store; prefix bytes keep the families apart, ids are
// fixed-width big-endian):
//
//	c "coll" 0 db 0 name        catalog entry of a collection (BSON)
//	c "seq"                     the last id handed out to a collection or index
//	d collID keycodec(_id)      header + the user's BSON
//	i indexID keycodec(values)  [+ keycodec(_id) unless unique] -> keycodec(_id)
//	x ...                       expiry families, laid out by package ttlindex
//	o ts                        oplog entries, laid out by package oplog
//	p ts                        pre-images of update and delete entries, likewise
//	t lsid ...                  retryable writes' records (retry.go)
//
// With Options.Oplog, a write's oplog entries are appended to the batch of
// the write itself at its commit (commitLogged), so that the log never
// misses a committed write nor holds one that failed. A retryable write's
// statements record their results in that batch too (retry.go), and so do
// the pre-images of a collection with changeStreamPreAndPostImages
// (preimages.go).
//
// The value of an index entry is the primary key of its document, so index
// scans reach the document without decoding the entry key. This differs from
// the design sketch (empty values) because it lets unique entries leave the
// _id out of the key, making the uniqueness check a single Get.
//
// Documents carry a header with the system _ts and the parsed document ttl, so
// that visibility under TTL is decided without parsing BSON, and changes to
// the collection's TTL setting take effect without rewriting any document.
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
//     taken again would wait behind a queued catalog change.
//  2. The lock stripes of the lockTable (locks.go), one mutex per hash of
//     an _id or unique index key. A writer (one per request, never two at
//     once) takes its stripes in ascending order, adds more with TryLock
//     only, and when one is busy commits, releases all and takes the
//     union in order. An upsert inserts through the writer that saw the
//     miss, so the stripe of the missing key stays held and is never
//     waited for a second time.
//  3. Collection.metaMu, which orders read-modify-writes of a collection's
//     catalog entry (updateMeta), for example a writer marking an index
//     multikey while it holds its stripes.
//  4. Engine.mu, which guards the map of open collections and the id
//     sequence: held only for map access, id allocation and the catalog
//     commit of create and rename, never while waiting for another lock.
//  5. Leaf locks, held for a few statements and never while taking another:
//     oplog.Log's mu, taken to hand out timestamps and append entries to
//     a batch (under engine.mu for create and rename) and to publish a
//     commit; oplog.Log's trimMu, held by a trim, which takes mu briefly;
//     diskGuard.ballastMu (disk.go), which serializes making and removing
//     the ballast file, and MemDisk.mu (disk_mem.go), the simulated disk
//     of tests.
//
// Usage counters ($collStats latency and collection scans, $indexStats
// accesses; usage.go) are atomics and a sync.Map on the Collection, taken
// by no lock.
//
// Readers take engine.mu only to look a collection up: a collection's state
// is an immutable snapshot swapped atomically, and pebble gives each read a
// consistent view. Cursors notice between batches that their collection was
// dropped or renamed, or their index dropped.
package engine
