package conn

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// Dispatcher is what serves the commands: the server. The transport calls
// it from each connection's goroutine.
type Dispatcher interface {
	// Open is called once for each accepted connection, before its first
	// message is read, and returns what answers its requests.
	Open(c *Conn) Handler
}

// Handler answers the requests of one connection. Its methods are called
// from the connection's goroutine, one at a time, except PeerGone, which
// the peer watch calls while Serve runs.
type Handler interface {
	// Serve runs one command and returns its reply.
	Serve(req *Request) Reply
	// ErrorReply is the reply to a request that failed before it reached
	// Serve (no $db, a refused OP_QUERY, invalid BSON).
	ErrorReply(e *mongoerr.Error) bson.Raw
	// HoldsCursors reports whether the connection has open cursors, which
	// exempt it from the idle timeout.
	HoldsCursors() bool
	// PeerGone says that the client went away while Serve ran for longer
	// than a moment; err is what reading its socket returned. The handler
	// stops the command.
	PeerGone(err error)
	// Trim is called once a reply has been sent, for the handler to let go
	// of buffers grown by an unusually large request.
	Trim()
	// Closed is called once when the connection has ended, for reason.
	Closed(reason string)
}

// Request is one command as the transport decoded it. Body and Sequences
// point into the connection's read buffer, which is reused for the next
// request: whoever keeps a part beyond Serve must copy it.
type Request struct {
	DB   string   // from $db (OP_MSG) or the namespace (OP_QUERY)
	Body bson.Raw // the command document
	// Sequences holds OP_MSG kind-1 document sequences by identifier
	// (for example "documents" of insert).
	Sequences map[string][]bson.Raw
	// ExhaustAllowed is the OP_MSG flag: the client takes a stream of
	// replies to this request. StreamFrom, when not negative, is the
	// StreamNext of the reply just streamed, which the same request is
	// served again from.
	ExhaustAllowed bool
	StreamFrom     int64
}

// Reply is a Handler's answer to a Request.
type Reply struct {
	Doc bson.Raw // valid until the next request of the connection
	// StreamNext, when not negative, continues a stream (see
	// Request.ExhaustAllowed): Doc goes out with moreToCome and the same
	// request is served again with StreamFrom set to StreamNext.
	StreamNext int64
	// Close ends the connection instead of replying.
	Close bool
}
