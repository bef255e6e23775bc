package command

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Request is one command as the handlers see it.
//
// Body and Sequences point into the connection's read buffer, which is reused
// for the next request: a handler must copy any part it keeps beyond its
// return (bytes.Clone, or bson.Raw.Clone).
type Request struct {
	DB   string   // from $db (OP_MSG) or the namespace (OP_QUERY)
	Name string   // the command name as the client spelled it
	Body bson.Raw // the command document
	// Sequences holds OP_MSG kind-1 document sequences by identifier
	// (for example "documents" of insert).
	Sequences map[string][]bson.Raw

	reply []byte // the connection's reply buffer, see BeginReply
}

// Handler runs one command. It returns the complete reply document
// (including ok: 1) or an error; a *mongoerr.Error becomes {ok: 0, code,
// ...}.
type Handler func(ctx context.Context, req *Request) (bson.Raw, error)

// Command is a command a package serves, for the server's registry.
type Command struct {
	Name string
	// Aliases are other spellings of Name (isMaster for hello).
	Aliases []string
	Handle  Handler
	// AdminOnly commands run only against the admin database, as in
	// MongoDB.
	AdminOnly bool
}
