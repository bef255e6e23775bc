// Package diag holds what the diagnostic commands report about the
// process rather than the store: the ring of recent log lines and startup
// warnings that getLog returns, and the memory figures of serverStatus and
// hostInfo.
//
// Locks: LogRing.mu, a leaf held while a log line is added or the lines
// are copied out.
package diag
