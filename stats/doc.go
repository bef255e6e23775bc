// Package stats holds the server's counters: commands by kind (the
// opcounters of serverStatus) and the transport's traffic (its network
// section), and exports them to Prometheus for --metrics-listen.
//
// It holds no locks: the counters are atomics, added to on the request
// path and read without stopping it.
package stats
