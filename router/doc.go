// Package router is Lethe's face when several servers share one store
// (--store tikv or tikv-mock, without --repl-set): each server presents
// itself to drivers as a mongos, a router of a sharded cluster, so that a
// client given all of them in its seed list (or by SRV) monitors each,
// spreads its operations over them, pins a transaction to one, and retries
// a retryable write on another. A mongos is the only kind of MongoDB server
// that drivers expect to find several of, every one writable; several
// primaries of one replica set they would refuse.
//
// A Router adds to hello what mongos adds (isWritablePrimary, msg:
// "isdbgrid"; AppendHello) and the addresses of the live servers on the
// store's roster (AppendHosts), which drivers do not read from a mongos:
// they find the servers through their seed list alone. Its Clock is the
// cluster time of $clusterTime and operationTime: the server's own, moved
// past any later time a client brings from another server.
//
// Locks: Router.mu, the cached roster, and Clock.mu, the highest time
// brought from another server: leaves, never held across a call to the
// store or a wait. A roster read runs under Router.readMu, taken before
// Router.mu, so that concurrent hellos read the store once.
package router
