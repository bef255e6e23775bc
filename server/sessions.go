package server

// Sessions: the commands that start, end, refresh and kill them, and what a
// session owns in the server, the cursors opened in it and its running
// command. Which sessions are live, and their timeout, is package
// session's business (see session.Registry); whose they are, sessionowner.go.

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/session"
)

func (s *Server) sessionCommands() []commandDef {
	cmds := []commandDef{
		{name: "startSession", handle: s.startSession},
		{name: "endSessions", handle: s.endSessions},
		{name: "refreshSessions", handle: s.refreshSessions},
		{name: "killSessions", handle: s.killSessions},
		{name: "killAllSessions", handle: s.killAllSessions},
		{name: "killAllSessionsByPattern", handle: s.killAllSessionsByPattern},
	}
	return append(cmds, s.transactionCommands()...)
}

// useSession marks the session of a command's lsid used, starting it if
// need be; it fails with TooManyLogicalSessions when no more fit, and
// with Unauthorized when the lsid names another user's digest and the
// client may not impersonate. The kill commands do not use their own
// session, as in MongoDB, lest they count as its activity or kill
// themselves.
func (s *Server) useSession(ctx context.Context, cmd *commandDef, req *Request) error {
	switch cmd.name {
	case "killSessions", "killAllSessions", "killAllSessionsByPattern":
		return nil
	}
	if err := s.checkTxnNumber(cmd, req); err != nil {
		return err
	}
	k, ok := lsidOf(req.lsid)
	if !ok {
		return nil
	}
	user := ""
	if req.lsidForeign {
		ok, err := s.mayImpersonate(ctx, req)
		if err != nil {
			return err
		}
		if !ok {
			return errSpoofedUID
		}
	} else {
		user = req.Conn.userName()
	}
	return s.sessions.Use(k, user, req.Conn.principal())
}

// sessionsGone closes what sessions that ended or timed out own: their
// cursors and open transactions. Their running commands go on, as in
// MongoDB; a transaction one of them runs in is aborted when it ends.
func (s *Server) sessionsGone(keys []session.Key) {
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[packKey(k)] = true
	}
	s.forgetRetries(keys)
	packed := make([]string, len(keys))
	for i, k := range keys {
		packed[i] = packKey(k)
	}
	s.txns.Forget(packed)
	if n := s.cursors.KillSessions(func(lsid string) bool { return set[lsid] }); n > 0 {
		s.log.Debug("closed the cursors of ended sessions", zap.Int("sessions", len(keys)), zap.Int("cursors", n))
	}
}

// startSession starts a new session of the client's user: {id: {id:
// UUID}, timeoutMinutes}.
func (s *Server) startSession(_ context.Context, req *Request) (bson.Raw, error) {
	k, err := s.sessions.Start(req.Conn.uid(), req.Conn.userName(), req.Conn.principal())
	if err != nil {
		return nil, err
	}
	idx, dst := req.BeginReply()
	didx, dst := bsoncore.AppendDocumentElementStart(dst, "id")
	dst = bsoncore.AppendBinaryElement(dst, "id", bson.TypeBinaryUUID, k.ID[:])
	dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
	dst = bsoncore.AppendInt32Element(dst, "timeoutMinutes", s.sessions.TimeoutMinutes())
	return req.EndReply(idx, dst)
}

// endSessions ends the caller's sessions it lists: their cursors close,
// and $listLocalSessions no longer shows them. Another user's session of
// the same UUID is not the caller's and lives on.
func (s *Server) endSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	ids, err := strictSessionList(req)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if id.child {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot specify a child session id %s", id.id)
		}
	}
	keys, err := s.sessionKeys(ctx, req, ids)
	if err != nil {
		return nil, err
	}
	s.sessions.End(keys)
	return noop(ctx, req)
}

// refreshSessions marks the caller's sessions it lists used, starting
// those that are not live.
func (s *Server) refreshSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	ids, err := strictSessionList(req)
	if err != nil {
		return nil, err
	}
	keys, err := s.sessionKeys(ctx, req, ids)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		user := ""
		if k.UID == req.Conn.uid() {
			user = req.Conn.userName()
		}
		if err := s.sessions.Use(k, user, req.Conn.principal()); err != nil {
			return nil, err
		}
	}
	return noop(ctx, req)
}

// killSessions kills the cursors, open transactions and running commands of the caller's
// sessions it lists (another user's with killAnySession), or when the list
// is empty of all the caller's sessions: of every session without access
// control, as in MongoDB. The sessions themselves live on.
func (s *Server) killSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	ids, err := sessionList(req.Name, req.Name, command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	keys, err := s.sessionKeys(ctx, req, ids, "killAnySession")
	if err != nil {
		return nil, err
	}
	m := sessionMatch{keys: map[session.Key]bool{}, uids: map[session.UID]bool{}}
	switch {
	case len(keys) > 0:
		for _, k := range keys {
			m.keys[k] = true
		}
	case s.cfg.Auth:
		m.uids[req.Conn.uid()] = true
	default:
		m.all = true
	}
	s.killMatching(req, m)
	return noop(ctx, req)
}

// killAllSessions kills the cursors and running commands of every session,
// or of the sessions of the users it lists ({user: "", db: ""} is the
// unauthenticated user, the owner of every session without access
// control).
func (s *Server) killAllSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	users, err := docList(req.Name, req.Name, command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	m := sessionMatch{all: len(users) == 0, uids: map[session.UID]bool{}}
	for _, u := range users {
		name, db, err := parseUser(req.Name+"."+req.Name, u, "user")
		if err != nil {
			return nil, err
		}
		m.uids[session.UserUID(name, db)] = true
	}
	s.killMatching(req, m)
	return noop(ctx, req)
}

// killAllSessionsByPattern kills the cursors and running commands of the
// sessions any pattern matches: {} every one, {lsid} one, {uid} a user's
// (lsid wins over uid, as in MongoDB). users and roles name whom to
// impersonate, which needs no check here.
func (s *Server) killAllSessionsByPattern(ctx context.Context, req *Request) (bson.Raw, error) {
	patterns, err := docList(req.Name, req.Name, command.FirstValue(req.Body))
	if err != nil {
		return nil, err
	}
	m := sessionMatch{all: len(patterns) == 0, keys: map[session.Key]bool{}, uids: map[session.UID]bool{}}
	field := req.Name + "." + req.Name
	for _, p := range patterns {
		var lsid *lsidArg
		var uid []byte
		for key, v := range command.Fields(p) {
			switch string(key) {
			case "lsid":
				d, ok := v.DocumentOK()
				if !ok {
					return nil, command.WrongType(field, "lsid", v.Type, "object")
				}
				id, err := parseLsid(field+".lsid", d, true)
				if err != nil {
					return nil, err
				}
				lsid = &id
			case "uid":
				if uid, err = argSHA256(field, "uid", v); err != nil {
					return nil, err
				}
			case "users", "roles":
				kind := map[string]string{"users": "user", "roles": "role"}[string(key)]
				list, err := docList(field, string(key), v)
				if err != nil {
					return nil, err
				}
				for _, d := range list {
					if _, _, err := parseUser(field+"."+string(key), d, kind); err != nil {
						return nil, err
					}
				}
			default:
				return nil, command.UnknownField(field, key)
			}
		}
		switch {
		case lsid != nil:
			k := session.Key{ID: lsid.id}
			copy(k.UID[:], lsid.uid)
			m.keys[k] = true
		case uid != nil:
			m.uids[session.UID(uid)] = true
		default:
			m.all = true
		}
	}
	s.killMatching(req, m)
	return noop(ctx, req)
}

// sessionMatch says which sessions a kill command names: all, those of
// the users whose digests uids holds, and those keys holds.
type sessionMatch struct {
	all  bool
	uids map[session.UID]bool
	keys map[session.Key]bool
}

// match reports whether the packed session lsid is one m names.
func (m sessionMatch) match(lsid string) bool {
	k, ok := lsidOf(lsid)
	return ok && (m.all || m.uids[k.UID] || m.keys[k])
}

// killMatching kills the cursors and running commands of the matching
// sessions, but not the command doing the killing.
func (s *Server) killMatching(req *Request, m sessionMatch) {
	cursors := s.cursors.KillSessions(m.match)
	s.txns.Kill(m.match)
	ops := 0
	for _, c := range s.connections() {
		if c != req.Conn && c.killSession(m.match) {
			ops++
		}
	}
	s.log.Info("killed sessions", zap.String("command", req.Name), zap.Int64("conn", req.Conn.id),
		zap.Int("cursors", cursors), zap.Int("operations", ops))
}

// lsidArg is a session id a command names.
type lsidArg struct {
	id    session.ID
	uid   []byte // nil when not given
	child bool   // a transaction's child session (txnUUID)
}

// strictSessionList reads the session list of endSessions and
// refreshSessions, whose parsers refuse any other argument.
func strictSessionList(req *Request) ([]lsidArg, error) {
	for key := range command.Args(req.Body) {
		return nil, command.UnknownField(req.Name, key)
	}
	return sessionList(req.Name, req.Name, command.FirstValue(req.Body))
}

// sessionList reads an array of sessions as clients name them:
// {id: UUID, uid?, txnNumber?, txnUUID?}.
func sessionList(cmd, field string, v bson.RawValue) ([]lsidArg, error) {
	docs, err := docList(cmd, field, v)
	if err != nil {
		return nil, err
	}
	ids := make([]lsidArg, 0, len(docs))
	for _, d := range docs {
		id, err := parseLsid(cmd+"."+field, d, false)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// docList reads an array of documents.
func docList(cmd, field string, v bson.RawValue) ([]bson.Raw, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, command.WrongType(cmd, field, v.Type, "array")
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid %s array: %v", field, err)
	}
	docs := make([]bson.Raw, 0, len(vals))
	for _, e := range vals {
		d, ok := e.DocumentOK()
		if !ok {
			return nil, command.WrongType(cmd, field, e.Type, "object")
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// parseLsid reads one session id; needUID for the server's own form
// (LogicalSessionId), in which uid is required.
func parseLsid(ctx string, doc bson.Raw, needUID bool) (lsidArg, error) {
	var out lsidArg
	var haveID, haveTxnNumber bool
	for key, v := range command.Fields(doc) {
		var err error
		switch string(key) {
		case "id":
			err = argUUID(ctx, "id", v, out.id[:])
			haveID = true
		case "uid":
			out.uid, err = argSHA256(ctx, "uid", v)
		case "txnNumber":
			if v.Type != bson.TypeInt64 {
				err = command.WrongType(ctx, "txnNumber", v.Type, "long")
			}
			haveTxnNumber = true
		case "txnUUID":
			var u session.ID
			err = argUUID(ctx, "txnUUID", v, u[:])
			out.child = true
		default:
			err = command.UnknownField(ctx, key)
		}
		if err != nil {
			return out, err
		}
	}
	switch {
	case !haveID:
		return out, command.MissingField(ctx, "id")
	case needUID && out.uid == nil:
		return out, command.MissingField(ctx, "uid")
	case haveTxnNumber && !out.child:
		return out, mongoerr.New(mongoerr.InvalidOptions, "Cannot specify txnNumber in lsid without specifying txnUUID")
	}
	return out, nil
}

// parseUser reads {user, db} (or {role, db}) and returns the name and db.
func parseUser(ctx string, doc bson.Raw, kind string) (string, string, error) {
	var name, db string
	var haveName, haveDB bool
	for key, v := range command.Fields(doc) {
		var err error
		switch string(key) {
		case kind:
			name, err = command.String(ctx, kind, v)
			haveName = true
		case "db":
			db, err = command.String(ctx, "db", v)
			haveDB = true
		default:
			err = command.UnknownField(ctx, key)
		}
		if err != nil {
			return "", "", err
		}
	}
	switch {
	case !haveName:
		return "", "", command.MissingField(ctx, kind)
	case !haveDB:
		return "", "", command.MissingField(ctx, "db")
	}
	return name, db, nil
}

// argUUID reads a UUID (binary subtype 4 of 16 bytes) into dst.
func argUUID(ctx, field string, v bson.RawValue, dst []byte) error {
	subtype, data, ok := v.BinaryOK()
	switch {
	case !ok:
		return command.WrongType(ctx, field, v.Type, "binData")
	case subtype != bson.TypeBinaryUUID:
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong binData type '%s', expected type 'UUID'", ctx, field, binSubtypeName(subtype))
	case len(data) != 16:
		return mongoerr.New(mongoerr.InvalidLength, "Invalid UUID length of %d for field '%s.%s'", len(data), ctx, field)
	}
	copy(dst, data)
	return nil
}

// argSHA256 reads a user digest: 32 bytes of generic binary.
func argSHA256(ctx, field string, v bson.RawValue) ([]byte, error) {
	subtype, data, ok := v.BinaryOK()
	switch {
	case !ok:
		return nil, command.WrongType(ctx, field, v.Type, "binData")
	case subtype != bson.TypeBinaryGeneric:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong binData type '%s', expected type 'general'", ctx, field, binSubtypeName(subtype))
	case len(data) != 32:
		return nil, mongoerr.New(mongoerr.BadValue, "Unsupported SHA256Block hash length: %d", len(data))
	}
	return data, nil
}

func binSubtypeName(t byte) string {
	switch t {
	case bson.TypeBinaryGeneric:
		return "general"
	case bson.TypeBinaryFunction:
		return "function"
	case bson.TypeBinaryBinaryOld:
		return "binary"
	case bson.TypeBinaryUUIDOld:
		return "uuid_old"
	case bson.TypeBinaryUUID:
		return "uuid"
	case bson.TypeBinaryMD5:
		return "md5"
	case bson.TypeBinaryEncrypted:
		return "encrypt"
	}
	return fmt.Sprintf("%d", t)
}
