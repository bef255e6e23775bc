// Package usage counts how a collection is used, for $collStats
// (latencyStats, queryExecStats) and $indexStats: latency histograms by
// kind of command, collection scans, and the operations that used each
// index since it was built or the collection opened. The counters are
// atomic adds on the request path, read without stopping it. The engine
// keeps one Counters on each open collection, so they survive catalog
// changes and end with a drop, as MongoDB's do.
package usage
