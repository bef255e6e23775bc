// Package replset is Lethe's replica-set face: a server started with a
// set name (mongod's --replSet) presents itself as the primary of a
// one-member replica set that is already initiated, so that drivers unlock
// what they keep for replica sets (sessions, retryable writes, change
// streams) and connections with ?replicaSet=NAME select it. There is no
// other member, no election and no replication; the term is always 1.
//
// A Set answers rs.status(), rs.conf() and rs.initiate() (Commands) and
// adds the set's fields to hello (AppendHello). Its ClusterClock is the
// cluster time of $clusterTime and operationTime: OplogClock with the
// oplog on, TickClock without. The server keeps hello's topologyVersion,
// which a standalone server reports too, and the decoration of replies.
//
// Locks: TickClock.mu, a leaf held while reading or moving the time, never
// while waiting; Set has none (its address is set once, atomically).
package replset
