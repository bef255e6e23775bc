// Package concern holds the read and write concerns of a one-member
// replica set, which the server checks around every command in
// replica-set mode. Every level of read concern sees the same data on one
// node: what is written is at once majority-committed and, the WAL being
// synced before a write is acknowledged, journaled. So the levels are
// checked and accepted, and afterClusterTime waits for the cluster time;
// a write concern that needs more members than one fails as MongoDB's
// does, with a writeConcernError after the write. After a command, the
// reply gets the member's $clusterTime and operationTime.
//
// It holds no state and no locks: the cluster clock is the caller's.
package concern
