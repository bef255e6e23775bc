// Package conn is the transport, the first layer of the stack: it listens,
// accepts connections within the connection limit, reads whole frames
// under the connection timeouts, decodes OP_MSG and the legacy OP_QUERY
// hello with package wire, writes replies (compressed as negotiated), and
// watches the socket of a client whose command runs long so that the
// command stops when the client goes away.
//
// It knows nothing of commands: a Dispatcher (the server) opens a Handler
// for each connection, and the Handler answers each decoded Request. conn
// imports no server or engine package.
//
// Locks: Listener.mu guards the listener and the set of connections; it is
// a leaf, never held while calling a Handler. A Conn's fields are its own
// goroutine's, except its reader, which the peer watch borrows while the
// goroutine waits for its Handler, and the watch's atomic fields, which its
// timer reads (watch.go).
package conn
