// Package shutdown answers the shutdown and fsync commands. shutdown asks
// the process that runs the server to stop it (Service.Requested), the way
// a signal does, so that the process shuts down through its one path;
// fsync has nothing to force, as every acknowledged write has already
// synced its log.
//
// It holds no locks of its own: the request is a channel closed once.
package shutdown
