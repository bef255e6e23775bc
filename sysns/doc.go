// Package sysns keeps clients out of the server's system.* collections.
// Collections named system.* belong to the server. Clients may create and
// write only those MongoDB lets them (isLegalClientSystemNS in its source);
// any other is InvalidNamespace, so that no client can plant a collection
// that a later version of Lethe, or a tool, takes for one of its own. The
// server runs its Guards before the handlers of the commands that create,
// write or rename collections.
//
// It holds no state and no locks.
package sysns
