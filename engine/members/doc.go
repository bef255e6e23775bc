// Package members keeps the roster of the Lethe servers that share one
// store: each server holds a lease on a record of its own, renewed by a
// heartbeat, that says where clients reach it and how far it has caught up
// (the catalog version it has loaded, the lowest oplog timestamp it may
// still commit at). What one server must wait for from all the others (a
// catalog change seen everywhere, a change stream's visible point, ranges
// of work taken over from a dead server) is read from the live records.
//
// A record lives at "m" + the server's id, in the store itself, so that the
// roster needs nothing beyond the store's transactions. "m" alone is the
// roster's epoch, rewritten by every join and leave: a Roster reads the
// records by key and scans them only when the epoch has moved, as the
// records are rewritten many times a second and a scan steps over all
// their versions. A lease is judged
// by the store's shared time (the caller's clock, clock.Synced over TiKV's
// timestamp oracle), never by another server's wall clock: a record whose
// expiry has passed belongs to a server that is gone or cut off, and a
// server whose own renewals fail for longer than its lease stops acting as
// a member (Member.Valid) before anyone else counts it out.
//
// # Locks
//
// Member.renewMu, held by one renewal across its store transaction, then
// Member.mu, which guards the record a server will publish next and the
// time of its last renewal: a leaf, never held across a store call.
package members
