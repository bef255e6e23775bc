// Package expiryscan finds the documents of a collection that expire, by
// range scans of the expiry families (package ttlindex lays them out) and
// of the date range of TTL indexes, never by a scan of the collection:
// those due now, for the reaper's batches, and those whose expiry falls
// in a window, for ExpiringIn.
//
// It reads the store it is handed and a description of the collection
// (Collection); the engine locks, loads and deletes what it finds, so the
// package never imports the engine.
package expiryscan
