package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// Authentication: the SASL conversations (saslStart, saslContinue and
// hello's speculativeAuthenticate), MONGODB-X509 (authenticate), logout,
// and what a connection knows of who it is. Whether it may do what it asks
// is authz.go's.
//
// As in MongoDB 7, a connection is authenticated as one user at most;
// authenticating again as the same user is allowed, as another is refused
// until logout.

// conversationID is the id of every conversation: a connection has at most
// one in progress, so MongoDB, too, always answers 1.
const conversationID = 1

// connAuth is a connection's authentication state; only the connection's
// goroutine touches it.
type connAuth struct {
	user   *authedUser
	conv   *saslConv // the conversation in progress, nil for none
	failed bool      // the last attempt failed; see throttle
}

// authedUser is the user a connection authenticated as and what it may do,
// as resolved at generation.
type authedUser struct {
	name, db string
	// key names the user for ownership checks (Conn.userKey), made once
	// rather than on every command.
	key        string
	mechanism  auth.Mechanism
	roles      []auth.RoleName
	grants     *auth.Grants
	generation uint64
}

// saslConv is a SCRAM conversation in progress.
type saslConv struct {
	mech      auth.Mechanism
	db        string
	conv      *auth.Conversation
	skipEmpty bool // the client asked to finish without the empty exchange
	// awaitingEmpty: the proof was accepted and the server-final message
	// sent; the client's empty message ends the conversation.
	awaitingEmpty bool
	user          string
	// speculative: the conversation began in hello, so that its outcome
	// counts as a speculative authentication however it ends.
	speculative bool
}

// authState is the server's side of authentication.
type authState struct {
	// generation changes whenever a user or role is written, so that
	// connections resolve their privileges again before their next command.
	generation atomic.Uint64
	throttle   *auth.Throttle
	// decoyKey derives the salts shown for users that do not exist, the
	// same for one name for the server's lifetime (auth.Decoy).
	decoyKey []byte

	mu       sync.Mutex
	counters map[auth.Mechanism]*mechCounters
	// hasUsers caches whether any user exists, for the localhost
	// exception; valid while usersGen equals generation.
	hasUsers, hasUsersKnown bool
	usersGen                uint64
}

// mechCounters are serverStatus's security.authentication.mechanisms.
type mechCounters struct {
	received, successful, failed int64
	specReceived, specSuccessful int64
}

func newAuthState() *authState {
	return &authState{throttle: auth.NewThrottle(), decoyKey: auth.NewDecoyKey(), counters: make(map[auth.Mechanism]*mechCounters)}
}

// usersChanged is called after every write to users or roles.
func (s *Server) usersChanged() { s.authz.generation.Add(1) }

// counter returns mech's counters; a.mu must be held.
func (a *authState) counter(mech auth.Mechanism) *mechCounters {
	c := a.counters[mech]
	if c == nil {
		c = &mechCounters{}
		a.counters[mech] = c
	}
	return c
}

func (a *authState) count(mech auth.Mechanism, speculative, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counter(mech)
	c.received++
	if speculative {
		c.specReceived++
	}
	switch {
	case ok && speculative:
		c.successful++
		c.specSuccessful++
	case ok:
		c.successful++
	default:
		c.failed++
	}
}

// countFallback counts a speculative attempt the driver will make again
// with another mechanism.
func (a *authState) countFallback(mech auth.Mechanism) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.counter(mech).specReceived++
}

func (s *Server) authCommands() []commandDef {
	return []commandDef{
		{name: "saslStart", handle: s.saslStart},
		{name: "saslContinue", handle: s.saslContinue},
		{name: "authenticate", handle: s.authenticate},
		{name: "logout", handle: s.logout},
		{name: "connectionStatus", handle: s.connectionStatus},
	}
}

// errAuthFailed is the one answer to every failed attempt, so that a
// client learns nothing of which users exist.
func errAuthFailed() error {
	return mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")
}

// saslStartArgs is what saslStart and speculativeAuthenticate carry.
type saslStartArgs struct {
	mech      auth.Mechanism
	payload   []byte
	skipEmpty bool
}

func parseSaslStart(cmd string, body bson.Raw, speculative bool) (saslStartArgs, error) {
	var a saslStartArgs
	var haveMech bool
	for key, v := range command.Fields(body) {
		var err error
		switch string(key) {
		case "mechanism":
			var m string
			m, err = command.String(cmd, "mechanism", v)
			a.mech, haveMech = auth.Mechanism(m), true
		case "payload":
			a.payload, err = saslPayload(cmd, v)
		case "options":
			var opts bson.Raw
			if opts, err = command.Doc(cmd, "options", v); err == nil {
				if skip, e := opts.LookupErr("skipEmptyExchange"); e == nil {
					a.skipEmpty, err = command.Bool(cmd, "skipEmptyExchange", skip)
				}
			}
		}
		if err != nil {
			return a, err
		}
	}
	if !haveMech {
		return a, command.MissingField(cmd, "mechanism")
	}
	// The drivers' speculative conversations always skip the empty
	// exchange (the authentication specification requires it).
	a.skipEmpty = a.skipEmpty || speculative
	return a, nil
}

// saslPayload reads a SASL payload, binary data as the drivers send it or
// a string as old shells did.
func saslPayload(cmd string, v bson.RawValue) ([]byte, error) {
	switch v.Type {
	case bson.TypeBinary:
		_, data := v.Binary()
		return data, nil
	case bson.TypeString:
		return []byte(v.StringValue()), nil
	}
	return nil, command.WrongType(cmd, "payload", v.Type, "binData", "string")
}

func (s *Server) saslStart(ctx context.Context, req *Request) (bson.Raw, error) {
	args, err := parseSaslStart(req.Name, req.Body, false)
	if err != nil {
		return nil, err
	}
	reply, done, err := s.startConversation(ctx, req, args, false)
	if err != nil {
		return nil, err
	}
	return s.saslReply(req, reply, done)
}

func (s *Server) saslReply(req *Request, payload []byte, done bool) (bson.Raw, error) {
	idx, dst := req.BeginReply()
	dst = bsoncore.AppendInt32Element(dst, "conversationId", conversationID)
	dst = bsoncore.AppendBooleanElement(dst, "done", done)
	dst = bsoncore.AppendBinaryElement(dst, "payload", 0, payload)
	return req.EndReply(idx, dst)
}

// startConversation begins a SCRAM conversation on req's connection with
// the client's first message and returns the server's answer.
func (s *Server) startConversation(ctx context.Context, req *Request, args saslStartArgs, speculative bool) ([]byte, bool, error) {
	c := req.Conn
	c.auth.conv = nil
	if (args.mech != auth.ScramSHA1 && args.mech != auth.ScramSHA256) || !s.mechanismEnabled(args.mech) {
		return nil, false, mongoerr.New(mongoerr.MechanismUnavailable,
			"Received authentication for mechanism %s which is unknown or not enabled", args.mech)
	}
	if err := s.authDelay(ctx, c); err != nil {
		return nil, false, err
	}
	db := req.DB
	conv, err := auth.NewConversation(args.mech, func(user string) (auth.ScramCredential, error) {
		return s.lookupCredential(ctx, db, user, args.mech)
	})
	if err != nil {
		return nil, false, fmt.Errorf("server: start %s conversation: %w", args.mech, err)
	}
	conv.WithDecoy(auth.Decoy{Key: s.authz.decoyKey, Iterations: s.scramIterations(args.mech)})
	sc := &saslConv{mech: args.mech, db: db, conv: conv, skipEmpty: args.skipEmpty, speculative: speculative}
	c.auth.conv = sc
	return s.stepConversation(ctx, req, sc, args.payload, speculative)
}

// lookupCredential finds the stored keys of user for mech.
func (s *Server) lookupCredential(ctx context.Context, db, user string, mech auth.Mechanism) (auth.ScramCredential, error) {
	u, err := s.users.Store().User(ctx, db, user)
	if err != nil {
		return auth.ScramCredential{}, err
	}
	if u == nil {
		return auth.ScramCredential{}, auth.ErrUnknownUser
	}
	cred, ok := u.Credentials[mech]
	if !ok {
		// A user created for the other mechanism only fails at once, as in
		// MongoDB, so that a driver that tried it speculatively falls back
		// to what saslSupportedMechs (which names the user's mechanisms
		// anyway) told it.
		return auth.ScramCredential{}, errNoCredential{mech: mech, user: user}
	}
	return cred, nil
}

// errNoCredential is the lookup's failure for a user without credentials
// for the mechanism asked for.
type errNoCredential struct {
	mech auth.Mechanism
	user string
}

func (e errNoCredential) Error() string {
	return fmt.Sprintf("Unable to use %s based authentication for user without any %s credentials registered", e.mech, e.mech)
}

func (s *Server) saslContinue(ctx context.Context, req *Request) (bson.Raw, error) {
	var payload []byte
	var id int32 = -1
	for key, v := range command.Args(req.Body) {
		var err error
		switch string(key) {
		case "conversationId":
			id, err = command.Int32(req.Name, "conversationId", v)
		case "payload":
			payload, err = saslPayload(req.Name, v)
		}
		if err != nil {
			return nil, err
		}
	}
	sc := req.Conn.auth.conv
	if sc == nil || id != conversationID {
		return nil, mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	if sc.db != req.DB {
		req.Conn.auth.conv = nil
		return nil, mongoerr.New(mongoerr.ProtocolError, "Attempt to switch database target during SASL authentication.")
	}
	reply, done, err := s.stepConversation(ctx, req, sc, payload, false)
	if err != nil {
		return nil, err
	}
	return s.saslReply(req, reply, done)
}

// stepConversation feeds the client's message to sc and returns the
// server's answer and whether the conversation is over. A failure ends the
// conversation and is logged, counted and throttled.
func (s *Server) stepConversation(ctx context.Context, req *Request, sc *saslConv, payload []byte, speculative bool) ([]byte, bool, error) {
	c := req.Conn
	speculative = speculative || sc.speculative
	if sc.awaitingEmpty {
		// The client's last, empty message: the proof was checked before.
		c.auth.conv = nil
		return nil, true, s.authenticated(ctx, req, sc.user, sc.db, sc.mech, speculative)
	}
	reply, err := sc.conv.Step(payload)
	if sc.user == "" {
		sc.user = sc.conv.Username()
	}
	if err != nil {
		c.auth.conv = nil
		var noCred errNoCredential
		if errors.As(err, &noCred) {
			if speculative {
				// Drivers try SCRAM-SHA-256 in hello whatever the user
				// has, and fall back to what saslSupportedMechs says:
				// negotiation, not a guess, so it is counted but neither
				// logged as a failure nor held against the host.
				s.authz.countFallback(sc.mech)
			} else {
				s.authFailed(c, sc.user, sc.db, sc.mech, speculative, err)
			}
			return nil, false, mongoerr.New(mongoerr.MechanismUnavailable, "%s", noCred.Error())
		}
		if !errors.Is(err, auth.ErrAuthenticationFailed) {
			// The store failed: not the client's doing.
			return nil, false, fmt.Errorf("server: authenticate %s@%s: %w", sc.user, sc.db, err)
		}
		s.authFailed(c, sc.user, sc.db, sc.mech, speculative, errors.New(sc.conv.Reason()))
		return nil, false, errAuthFailed()
	}
	if !sc.conv.Done() {
		return reply, false, nil
	}
	if !sc.conv.Valid() {
		c.auth.conv = nil
		s.authFailed(c, sc.user, sc.db, sc.mech, speculative, errors.New("proof refused"))
		return nil, false, errAuthFailed()
	}
	if !sc.skipEmpty {
		sc.awaitingEmpty = true
		return reply, false, nil
	}
	c.auth.conv = nil
	return reply, true, s.authenticated(ctx, req, sc.user, sc.db, sc.mech, speculative)
}

// authenticated makes the connection user@db.
func (s *Server) authenticated(ctx context.Context, req *Request, user, db string, mech auth.Mechanism, speculative bool) error {
	c := req.Conn
	if prev := c.auth.user; prev != nil && (prev.name != user || prev.db != db) {
		return mongoerr.New(mongoerr.Code(5626701), "Each client connection may only be authenticated once. Previously authenticated as: %s@%s", prev.name, prev.db)
	}
	u, err := s.resolveUser(ctx, user, db)
	if err != nil {
		return err
	}
	if u == nil {
		// Dropped while the conversation ran.
		s.authFailed(c, user, db, mech, speculative, errors.New("user dropped"))
		return errAuthFailed()
	}
	u.mechanism = mech
	c.auth.user = u
	c.auth.failed = false
	s.authz.throttle.Succeeded(c.remoteHost())
	s.authz.count(mech, speculative, true)
	s.log.Info("authenticated", zap.Int64("conn", c.id), zap.String("remote", c.remote),
		zap.String("user", user), zap.String("db", db), zap.String("mechanism", string(mech)))
	return nil
}

// resolveUser loads user@db and the privileges of its roles; nil if the
// user does not exist.
func (s *Server) resolveUser(ctx context.Context, user, db string) (*authedUser, error) {
	gen := s.authz.generation.Load()
	store := s.users.Store()
	u, err := store.User(ctx, db, user)
	if err != nil || u == nil {
		return nil, err
	}
	grants, err := auth.Resolve(ctx, store, u.Roles)
	if err != nil {
		return nil, fmt.Errorf("server: resolve roles of %s@%s: %w", user, db, err)
	}
	return &authedUser{name: user, db: db, key: db + "\x00" + user, roles: u.Roles, grants: grants, generation: gen}, nil
}

// authFailed logs and counts a failed attempt (never the password, which
// the server never sees) and slows the address's next attempts.
func (s *Server) authFailed(c *Conn, user, db string, mech auth.Mechanism, speculative bool, cause error) {
	c.auth.failed = true
	s.authz.throttle.Failed(c.remoteHost(), time.Now())
	s.authz.count(mech, speculative, false)
	s.log.Warn("authentication failed", zap.Int64("conn", c.id), zap.String("remote", c.remote),
		zap.String("user", user), zap.String("db", db), zap.String("mechanism", string(mech)),
		zap.Bool("speculative", speculative), zap.NamedError("reason", cause))
}

// authDelay holds a connection whose address failed recently before its
// next attempt is looked at. Only this connection waits: other clients,
// from the same address too, go on.
func (s *Server) authDelay(ctx context.Context, c *Conn) error {
	d := s.authz.throttle.Delay(c.remoteHost(), time.Now())
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return contextCause(ctx)
	}
}

// authenticate is MONGODB-X509: the client is the user of $external named
// as its verified certificate's subject.
func (s *Server) authenticate(ctx context.Context, req *Request) (bson.Raw, error) {
	var mech, user string
	for key, v := range command.Args(req.Body) {
		var err error
		switch string(key) {
		case "mechanism":
			mech, err = command.String(req.Name, "mechanism", v)
		case "user":
			user, err = command.String(req.Name, "user", v)
		}
		if err != nil {
			return nil, err
		}
	}
	name, err := s.authenticateX509(ctx, req, auth.Mechanism(mech), user, false)
	if err != nil {
		return nil, err
	}
	return command.OK(bson.E{Key: "dbname", Value: auth.ExternalDB}, bson.E{Key: "user", Value: name})
}

func (s *Server) authenticateX509(ctx context.Context, req *Request, mech auth.Mechanism, user string, speculative bool) (string, error) {
	c := req.Conn
	if mech != auth.X509 || !s.mechanismEnabled(mech) {
		return "", mongoerr.New(mongoerr.MechanismUnavailable,
			"Received authentication for mechanism %s which is unknown or not enabled", mech)
	}
	if req.DB != auth.ExternalDB {
		return "", mongoerr.New(mongoerr.BadValue, "X.509 authentication must always use the $external database.")
	}
	subject, ok := c.PeerSubject()
	if !ok {
		s.authFailed(c, user, auth.ExternalDB, mech, speculative, errors.New("no verified client certificate"))
		return "", mongoerr.New(mongoerr.AuthenticationFailed, "No verified subject name available from client")
	}
	if user != "" && user != subject {
		s.authFailed(c, user, auth.ExternalDB, mech, speculative, errors.New("user is not the certificate's subject"))
		return "", mongoerr.New(mongoerr.AuthenticationFailed, "There is no x.509 client certificate matching the user.")
	}
	if err := s.authDelay(ctx, c); err != nil {
		return "", err
	}
	if err := s.authenticated(ctx, req, subject, auth.ExternalDB, mech, speculative); err != nil {
		return "", err
	}
	return subject, nil
}

// logout forgets the connection's user when it was authenticated on the
// command's database.
func (s *Server) logout(_ context.Context, req *Request) (bson.Raw, error) {
	c := req.Conn
	if u := c.auth.user; u != nil && u.db == req.DB {
		s.log.Info("logged out", zap.Int64("conn", c.id), zap.String("user", u.name), zap.String("db", u.db))
		c.auth.user = nil
	}
	c.auth.conv = nil
	return command.OK()
}

// currentUser returns the connection's user with privileges as of the
// last write to users and roles, or nil.
func (s *Server) currentUser(ctx context.Context, c *Conn) (*authedUser, error) {
	u := c.auth.user
	if u == nil || u.generation == s.authz.generation.Load() {
		return u, nil
	}
	fresh, err := s.resolveUser(ctx, u.name, u.db)
	if err != nil {
		return nil, err
	}
	if fresh != nil {
		fresh.mechanism = u.mechanism
	}
	// A dropped user is logged out, as MongoDB's user cache does.
	c.auth.user = fresh
	return fresh, nil
}

// connectionStatus reports who the connection is and, asked, what it may
// do.
func (s *Server) connectionStatus(ctx context.Context, req *Request) (bson.Raw, error) {
	var showPrivileges bool
	for key, v := range command.Args(req.Body) {
		if string(key) != "showPrivileges" {
			continue
		}
		var err error
		if showPrivileges, err = command.Bool(req.Name, "showPrivileges", v); err != nil {
			return nil, err
		}
	}
	users, roles, privileges := bson.A{}, bson.A{}, bson.A{}
	u, err := s.currentUser(ctx, req.Conn)
	if err != nil {
		return nil, err
	}
	if u != nil {
		users = append(users, bson.D{{Key: "user", Value: u.name}, {Key: "db", Value: u.db}})
		for _, r := range u.grants.Roles() {
			roles = append(roles, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
		}
		for _, p := range u.grants.Privileges() {
			privileges = append(privileges, privilegeDoc(p))
		}
	}
	info := bson.D{{Key: "authenticatedUsers", Value: users}, {Key: "authenticatedUserRoles", Value: roles}}
	if showPrivileges {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: privileges})
	}
	return command.OK(bson.E{Key: "authInfo", Value: info})
}

// privilegeDoc is p as MongoDB shows a privilege.
func privilegeDoc(p auth.Privilege) bson.D {
	var res bson.D
	switch r := p.Resource; {
	case r.AnyResource:
		res = bson.D{{Key: "anyResource", Value: true}}
	case r.Cluster:
		res = bson.D{{Key: "cluster", Value: true}}
	default:
		res = bson.D{{Key: "db", Value: r.DB}, {Key: "collection", Value: r.Collection}}
	}
	actions := make(bson.A, len(p.Actions))
	for i, a := range p.Actions {
		actions[i] = string(a)
	}
	return bson.D{{Key: "resource", Value: res}, {Key: "actions", Value: actions}}
}

// statusSection is serverStatus's security section: attempts per mechanism,
// in MongoDB's shape, with Lethe's count of failures beside them.
func (a *authState) statusSection() bson.D {
	a.mu.Lock()
	defer a.mu.Unlock()
	mechs := bson.D{}
	for _, m := range []auth.Mechanism{auth.ScramSHA1, auth.ScramSHA256, auth.X509} {
		c := a.counters[m]
		if c == nil {
			c = &mechCounters{}
		}
		mechs = append(mechs, bson.E{Key: string(m), Value: bson.D{
			{Key: "speculativeAuthenticate", Value: bson.D{{Key: "received", Value: c.specReceived}, {Key: "successful", Value: c.specSuccessful}}},
			{Key: "authenticate", Value: bson.D{{Key: "received", Value: c.received}, {Key: "successful", Value: c.successful}, {Key: "failed", Value: c.failed}}},
		}})
	}
	return bson.D{{Key: "authentication", Value: bson.D{{Key: "mechanisms", Value: mechs}}}}
}

// scramIterations is the iteration count new credentials for mech get.
func (s *Server) scramIterations(mech auth.Mechanism) int {
	if mech == auth.ScramSHA1 {
		return s.cfg.ScramSHA1Iterations
	}
	return s.cfg.ScramSHA256Iterations
}

// allMechanisms are the mechanisms Lethe has, in MongoDB's default order
// of authenticationMechanisms.
var allMechanisms = []auth.Mechanism{auth.X509, auth.ScramSHA1, auth.ScramSHA256}

// authMechanisms are the mechanisms clients may use.
func (s *Server) authMechanisms() []auth.Mechanism {
	if s.cfg.AuthMechanisms == nil {
		return allMechanisms
	}
	return s.cfg.AuthMechanisms
}

func (s *Server) mechanismEnabled(m auth.Mechanism) bool {
	return slices.Contains(s.authMechanisms(), m)
}
