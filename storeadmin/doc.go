// Package storeadmin answers the commands that administer the store
// rather than read or write documents: dataSize (the bytes and number of
// a collection's documents, or of an index range), compact (giving a
// collection's freed space back to the filesystem) and the cluster
// parameters (setClusterParameter, getClusterParameter: Lethe's one,
// changeStreamOptions). It works through the engine's exported API.
//
// It holds no locks of its own.
package storeadmin
