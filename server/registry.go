package server

import (
	"context"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/failpoint"
	"github.com/lethedb/lethe/shutdown"
	"github.com/lethedb/lethe/storeadmin"
	"github.com/lethedb/lethe/transaction"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Request is one command as the server's handlers see it: the request of
// the command kit, which handlers of other packages see, and what the
// server keeps of it (its connection, session, fail point and replica-set
// reply).
type Request struct {
	command.Request
	Conn *Conn

	// lsid is the command's session, packed (packKey), "" for none; see
	// Conn.requestSession. lsidForeign says its lsid named another user's
	// digest.
	lsid        string
	lsidForeign bool
	// generic holds the generic arguments dispatch reads.
	generic genericArgs
	// The command's transaction fields, read by checkTxnNumber:
	// hasTxnNumber and txnNumber, inTxn for autocommit: false (a statement
	// of a multi-document transaction) and startTxn for startTransaction.
	// txnSess is the session checked out for commitTransaction and
	// abortTransaction (txn.go).
	hasTxnNumber, inTxn, startTxn bool
	txnNumber                     int64
	txnSess                       *transaction.Session
	// failed is the failCommand fail point's data when it applies to this
	// command, and closeConn says it closes the connection (package
	// failpoint).
	failed    *failpoint.Data
	closeConn bool

	// Replica-set mode: the reply with the member's fields (see decorate),
	// and the writeConcernError the reply must carry.
	decorated []byte
	wcError   bson.Raw

	// Streaming hello: exhaustAllowed is the request's flag; streamFrom,
	// when not negative, is the topology counter of the last streamed reply,
	// which hello waits from; hello sets streamNext (-1 otherwise) to the
	// counter it answered with when the reply continues a stream.
	exhaustAllowed         bool
	streamFrom, streamNext int64

	// snapshot is the snapshot a read outside a transaction reads at
	// (readConcern level "snapshot"; snapshot.go), nil for none.
	snapshot *snapshotRead
}

// genericArgs are the generic arguments of a command that dispatch reads
// of every command, found in one pass over its body rather than a walk
// each; Type 0 for one absent. The first field of a name counts, as for
// a lookup.
type genericArgs struct {
	lsid, maxTimeMS, txnNumber, autocommit, startTransaction bson.RawValue
}

func (g *genericArgs) read(body bson.Raw) {
	*g = genericArgs{}
	for key, v := range command.Fields(body) {
		var dst *bson.RawValue
		switch string(key) {
		case "lsid":
			dst = &g.lsid
		case "maxTimeMS":
			dst = &g.maxTimeMS
		case "txnNumber":
			dst = &g.txnNumber
		case "autocommit":
			dst = &g.autocommit
		case "startTransaction":
			dst = &g.startTransaction
		default:
			continue
		}
		if dst.Type == 0 {
			*dst = v
		}
	}
}

// CursorOwner is whom the cursors the request opens belong to (package
// cursor).
func (req *Request) CursorOwner() cursor.Owner {
	return cursor.Owner{Conn: req.Conn.id, Client: req.Conn.principal(), Lsid: req.lsid, User: req.Conn.userKey(),
		InTxn: req.inTxn, Txn: req.txnNumber}
}

// cursorCommands are getMore and killCursors, which need to know who
// runs them (package cursor).
func (s *Server) cursorCommands() []commandDef {
	return []commandDef{
		{name: "getMore", handle: func(ctx context.Context, req *Request) (bson.Raw, error) {
			return s.cursors.GetMore(ctx, &req.Request, req)
		}},
		{name: "killCursors", handle: func(ctx context.Context, req *Request) (bson.Raw, error) {
			return s.cursors.KillCursors(ctx, &req.Request, req)
		}},
	}
}

// handlerFunc runs one command. It returns the complete reply document
// (including ok: 1) or an error; a *mongoerr.Error becomes {ok: 0, code, ...}.
type handlerFunc func(ctx context.Context, req *Request) (bson.Raw, error)

type commandDef struct {
	name    string
	aliases []string
	handle  handlerFunc
	// adminOnly commands run only against the admin database, as in MongoDB.
	adminOnly bool
}

// buildRegistry collects every command family into one lookup table keyed
// by name. Names are case-sensitive, as in MongoDB; aliases cover the
// historical spellings (isMaster/ismaster).
func (s *Server) buildRegistry() map[string]*commandDef {
	table := make(map[string]*commandDef)
	groups := [][]commandDef{
		s.handshakeCommands(),
		s.authCommands(),
		s.shutdownCommands(),
		s.adminCommands(),
		s.sessionCommands(),
		s.crudCommands(),
		s.cursorCommands(),
		s.opCommands(),
		s.catalogCommands(),
		s.testCommands(),
		kitCommands(s.users.Commands()),
		kitCommands(s.expiry.Commands()),
		kitCommands(s.stop.Commands()),
		kitCommands(s.params.Commands()),
		kitCommands(storeadmin.New(storeadmin.Config{Engine: s.eng, Auth: s.cfg.Auth, ReplicaSet: s.clustered()}).Commands()),
	}
	for _, g := range groups {
		for i := range g {
			c := &g[i]
			table[c.name] = c
			for _, a := range c.aliases {
				table[a] = c
			}
		}
	}
	return table
}

// shutdownCommands registers shutdown, which needs to know the client
// that runs it (the kit's request does not carry it); package shutdown
// serves the rest.
func (s *Server) shutdownCommands() []commandDef {
	return []commandDef{{name: "shutdown", adminOnly: true, handle: func(ctx context.Context, req *Request) (bson.Raw, error) {
		return s.stop.Shutdown(ctx, &req.Request, shutdown.Caller{ConnID: req.Conn.id, Remote: req.Conn.remote,
			User: req.Conn.userKey(), Loopback: isLoopback(req.Conn.remote)})
	}}}
}

// catalogCommands are the catalog commands (package catalog), which see
// the request's caller.
func (s *Server) catalogCommands() []commandDef {
	cmds := s.catalog.Commands()
	out := make([]commandDef, len(cmds))
	for i, c := range cmds {
		h := c.Handle
		out[i] = commandDef{name: c.Name, aliases: c.Aliases, adminOnly: c.AdminOnly,
			handle: func(ctx context.Context, req *Request) (bson.Raw, error) { return h(ctx, &req.Request, req) }}
	}
	return out
}

// ListableDatabases are the databases listDatabases shows the request's
// user (catalog.Caller).
func (req *Request) ListableDatabases(ctx context.Context) ([]string, error) {
	return req.Conn.srv.listableDatabases(ctx, req)
}

// kitCommands are the registry entries of commands another package serves
// with the command kit: their handlers see the kit's part of the request.
func kitCommands(cmds []command.Command) []commandDef {
	out := make([]commandDef, len(cmds))
	for i, c := range cmds {
		h := c.Handle
		out[i] = commandDef{name: c.Name, aliases: c.Aliases, adminOnly: c.AdminOnly,
			handle: func(ctx context.Context, req *Request) (bson.Raw, error) { return h(ctx, &req.Request) }}
	}
	return out
}

// wrapHandler makes the named command run check before its handler.
func (s *Server) wrapHandler(name string, check func(*Request) error) {
	cmd := s.commands[name]
	if cmd == nil {
		return
	}
	handle := cmd.handle
	cmd.handle = func(ctx context.Context, req *Request) (bson.Raw, error) {
		if err := check(req); err != nil {
			return nil, err
		}
		return handle(ctx, req)
	}
}

// testCommands are configureFailPoint, only with EnableTestCommands
// (package failpoint).
func (s *Server) testCommands() []commandDef {
	if !s.cfg.EnableTestCommands {
		return nil
	}
	return kitCommands(s.failCommand.Commands())
}
