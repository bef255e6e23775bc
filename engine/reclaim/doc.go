// Package reclaim frees the keys of dropped collections and indexes.
//
// Dropping a collection or an index leaves its keys unreachable at once:
// its catalog entry goes and its id is never handed out again. The keys
// themselves are reclaimed after that commit, range by range
// (kv.Store.DropRange), which is not transactional. So the commit that
// drops also records each range (record.ReclaimKey), and the record goes
// only once its range is gone; the engine's Open reclaims whatever a
// crash left recorded (Leftovers).
//
//	r lo -> hi                  a range [lo, hi) still to reclaim
//	r lo -> 0xff due(8) hi      the same, not before due (Unix ms)
//
// On a store that keeps replaced versions readable for a while (TiKV,
// kv.Sharded's VersionLifetime), the engine records its drops due that
// long after them and reclaims them in a periodic pass, as TiDB deletes a
// dropped table's ranges only once the GC safe point has passed the drop.
//
// It works on the kv.Store and kv.Txn the engine hands it and never
// imports the engine.
package reclaim
