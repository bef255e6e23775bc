package server

import (
	"context"
	"errors"
	"net"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/usermgmt"
)

// Authorization: with Config.Auth, every command is checked against the
// privileges auth.Required says it needs before it runs. Commands that need
// none (the handshake, authentication, ping...) run for anyone.

// authorizePrivileges refuses req unless its connection's user may run it
// (auth.Authorize), it is about the user itself (auth.OwnUserException),
// or the localhost exception applies.
func (s *Server) authorizePrivileges(ctx context.Context, cmd *commandDef, req *Request) error {
	need, err := auth.Required(cmd.name, req.DB, req.Body)
	if err != nil {
		// A command the table does not know, or cannot read, is refused:
		// access control fails closed.
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s: %v", req.DB, commandSummary(req), err)
	}
	if len(need) == 0 && authFree[cmd.name] {
		return nil
	}
	u, err := s.currentUser(ctx, req.Conn)
	if err != nil {
		return err
	}
	if u == nil {
		if s.localhostException(ctx, cmd, req) {
			return nil
		}
		return mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", cmd.name)
	}
	if len(need) == 0 {
		// Any authenticated client: the handler checks ownership (getMore,
		// killCursors, sessions) or filters (listDatabases).
		return nil
	}
	if cmd.name == "killOp" && s.ownsOp(req) {
		return nil // one's own operation needs no killop, as in MongoDB
	}
	if own, ok := auth.OwnUserException(cmd.name, req.DB, req.Body); ok && own.User == u.name && own.DB == u.db {
		allowed := true
		for _, a := range own.Actions {
			allowed = allowed && u.grants.Allows(auth.Resource{DB: own.DB}, a)
		}
		if allowed {
			return nil
		}
	}
	err = auth.AuthorizeRequired(u.grants, cmd.name, req.DB, req.Body, need)
	var denied *auth.UnauthorizedError
	if errors.As(err, &denied) {
		denied.Command = commandSummary(req) // the target too, not the name alone
		return mongoerr.New(mongoerr.Unauthorized, "%s", denied.Error())
	}
	if err != nil {
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s: %v", req.DB, commandSummary(req), err)
	}
	return nil
}

// authFree are the commands MongoDB answers before authentication: the
// handshake, authentication itself, and the connection's own state.
var authFree = map[string]bool{
	"hello": true, "ping": true, "buildInfo": true, "saslStart": true, "saslContinue": true,
	"authenticate": true, "logout": true, "connectionStatus": true, "whatsmyuri": true,
	"listCommands": true, "endSessions": true,
}

// localhostException lets a client on the loopback interface create the
// first user or role, in admin, while there is none, as MongoDB's localhost
// exception does; nothing else. A first user created in another database
// would end the exception with no one able to administer the server, so it
// is refused: MongoDB's documentation has the first user made in admin
// (docs/core/localhost-exception).
func (s *Server) localhostException(ctx context.Context, cmd *commandDef, req *Request) bool {
	if cmd.name != "createUser" && cmd.name != "createRole" {
		return false
	}
	if req.DB != usermgmt.DB {
		return false
	}
	if !isLoopback(req.Conn.remote) {
		return false
	}
	has, err := s.anyUserExists(ctx)
	return err == nil && !has
}

// anyUserExists says whether any user or role exists, cached until users
// or roles change.
func (s *Server) anyUserExists(ctx context.Context) (bool, error) {
	a := s.authz
	gen := a.generation.Load()
	a.mu.Lock()
	if a.hasUsersKnown && a.usersGen == gen {
		defer a.mu.Unlock()
		return a.hasUsers, nil
	}
	a.mu.Unlock()
	has, err := s.users.HasUsers(ctx)
	if err == nil && !has {
		has, err = s.users.HasRoles(ctx)
	}
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	a.hasUsers, a.hasUsersKnown, a.usersGen = has, true, gen
	a.mu.Unlock()
	return has, nil
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// remoteHost is the client's address without its port: failures are
// throttled per host, whatever port each attempt comes from.
func (c *Conn) remoteHost() string {
	host, _, err := net.SplitHostPort(c.remote)
	if err != nil {
		return c.remote
	}
	return host
}

// commandSummary names the command and its target as MongoDB's
// Unauthorized messages do, without the rest of the request (which may
// hold a password).
func commandSummary(req *Request) string {
	v := command.FirstValue(req.Body)
	if s, ok := v.StringValueOK(); ok {
		return "{ " + req.Name + ": \"" + s + "\" }"
	}
	return "{ " + req.Name + ": " + v.String() + " }"
}

// userKey names the connection's user for cursor ownership: "" for none.
func (c *Conn) userKey() string {
	if u := c.auth.user; u != nil {
		return u.key
	}
	return ""
}

// authorizedDatabases filters names to the databases u holds some privilege
// on, for listDatabases by a user who may not list them all.
func authorizedDatabases(u *authedUser, names []string) []string {
	if u == nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if u.grants.AnyInDB(n) {
			out = append(out, n)
		}
	}
	return out
}

// listableDatabases is what listDatabases lists: every database, or with
// access control and without the listDatabases privilege, those the user
// holds some privilege on (MongoDB's authorizedDatabases default).
func (s *Server) listableDatabases(ctx context.Context, req *Request) ([]string, error) {
	names := s.eng.Databases(ctx)
	if !s.cfg.Auth {
		return names, nil
	}
	u, err := s.currentUser(ctx, req.Conn)
	if err != nil {
		return nil, err
	}
	if u != nil && u.grants.Allows(auth.Resource{Cluster: true}, "listDatabases") {
		return names, nil
	}
	return authorizedDatabases(u, names), nil
}

// requiresAuth is listCommands' requiresAuth: whether the command needs a
// privilege at all.
func (s *Server) requiresAuth(name string) bool {
	need, err := auth.Required(name, "admin", bson.Raw{5, 0, 0, 0, 0})
	return err != nil || len(need) > 0
}

// noteAuthCatalogChange makes connections resolve their users again after a
// command that may have dropped or renamed admin.system.users or
// admin.system.roles wholesale; the user management commands say so
// themselves.
func (s *Server) noteAuthCatalogChange(cmd *commandDef, req *Request) {
	if req.DB != usermgmt.DB {
		return
	}
	switch cmd.name {
	case "drop", "dropDatabase", "renameCollection":
		s.usersChanged()
	}
}

// ownsOp reports whether killOp's target {op: N} is a running operation of
// the requesting connection's user.
func (s *Server) ownsOp(req *Request) bool {
	id, ok := req.Body.Lookup("op").AsInt64OK()
	if !ok {
		return false
	}
	me := req.Conn.userKey()
	for _, c := range s.visibleConns(req, false) {
		op := &c.ops.op
		op.mu.Lock()
		mine := op.id != 0 && int64(op.id) == id && op.user == me
		op.mu.Unlock()
		if mine {
			return true
		}
	}
	return false
}
