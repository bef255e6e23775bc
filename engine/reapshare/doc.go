// Package reapshare divides the TTL reaper's work among the Lethe servers
// that share one store (issue 22), so that each expired document is
// looked for by one server, and the work of a server that dies is taken
// over by the others.
//
// # Slots
//
// The work is cut into a fixed number of slots, as many as the store
// spreads its expiry families over buckets (engine/kv/bucketkv): slot b is
// bucket b of every collection's expiry families, and the date TTL
// indexes whose id falls on b (SlotOfIndex). A bucket of one collection's
// family is one contiguous range of stored keys, ordered by expiry time,
// so the holder of a slot finds what is due with one short range scan per
// family on TiKV, reads no key of another server's slots and steps over
// no document another server is purging. A date TTL index is not spread
// over buckets; it goes whole to one slot rather than being filtered by
// every server.
//
// # Leases
//
// Slot s is held under a lease record at Key(s), in the store itself:
// the holder's roster id (engine/members) and the store's time at which
// the lease runs out. A server takes, renews and hands over leases in one
// pessimistic transaction per round (Sharer.Round), every third of the
// lease: it locks every slot's record, reads the holders, and writes its
// decisions, so two servers never both take a free slot, and the
// correctness of the division rests on the store's transactions alone,
// never on anything in one process. Leases are judged by the store's
// shared time (clock.Synced over TiKV's timestamp oracle).
//
// The live roster decides who should hold what (Preferred): the live ids
// in order, slot s to the (s mod n)th, so each server holds its share,
// give or take one. A server takes a free or expired slot only if it is
// the slot's preferred holder, and hands a slot it holds to the preferred
// holder by writing that server's id into the record, which the new
// holder then renews. A server that dies stops renewing both its roster
// record and its leases; once both have run out the roster no longer
// names it, the slots it held have other preferred holders, and they take
// them. A server that leaves cleanly releases its leases (Release), so
// the others need not wait.
//
// A lease only divides work: the reaper's purge is itself a transaction
// that locks the document and checks it is still due, so a holder whose
// lease has just run out and the server taking over never delete one
// document twice; they only contend for it. For that the holder stops
// reaping a slot at the time its lease began plus the lease (Held), which
// is no later than the expiry the others judge it by.
//
// # Locks
//
// Sharer.roundMu, held by one round across its store transaction, then
// Sharer.mu, which guards the slots held: a leaf, never held across a
// store call.
package reapshare
