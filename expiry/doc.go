// Package expiry answers what clients ask of document expiry (TTL): the
// advanceClock command, which moves the manual clock so that
// applications can test expiry without waiting, and the reaper's counters
// that serverStatus reports as metrics.ttl. The expiry itself (keys, the
// reaper) is ttlindex's and the engine's.
//
// It holds no locks of its own; the manual clock has its own.
package expiry
