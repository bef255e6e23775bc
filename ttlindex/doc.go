// Package ttlindex is Lethe's time-to-live policy and machinery: which
// document ttl values count, the lifetime of a document under a collection
// setting, the byte layout of the expiry indexes, the clock, and the
// background reaper that purges expired documents.
//
// It knows nothing of the engine: the reaper drives the store through the
// small Store interface the engine implements.
package ttlindex
