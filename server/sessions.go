package server

// Sessions: the commands that start, end, refresh and kill them, and what a
// session owns in the server, the cursors opened in it and its running
// command. Which sessions are live, and their timeout, is package
// session's business (see session.Registry).

import (
	"bytes"
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/session"
)

func (s *Server) sessionCommands() []command {
	return []command{
		{name: "startSession", handle: s.startSession},
		{name: "endSessions", handle: s.endSessions},
		{name: "refreshSessions", handle: s.refreshSessions},
		{name: "killSessions", handle: s.killSessions},
		{name: "killAllSessions", handle: s.killAllSessions},
		{name: "killAllSessionsByPattern", handle: s.killAllSessionsByPattern},
	}
}

// useSession marks the session of a command's lsid used, starting it if
// need be; it fails with TooManyLogicalSessions when no more fit. The kill
// commands do not use their own session, as in MongoDB, lest they count
// as its activity or kill themselves.
func (s *Server) useSession(cmd *command, req *Request) error {
	switch cmd.name {
	case "killSessions", "killAllSessions", "killAllSessionsByPattern":
		return nil
	}
	if err := s.checkTxnNumber(req); err != nil {
		return err
	}
	id, ok := lsidOf(req.lsid)
	if !ok {
		return nil
	}
	return s.sessions.Use(id)
}

// sessionsGone closes what sessions that ended or timed out own: their
// cursors. Their running commands go on, as in MongoDB.
func (s *Server) sessionsGone(ids []session.ID) {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[string(id[:])] = true
	}
	s.forgetRetries(ids)
	if n := s.cursors.killSessions(func(lsid string) bool { return set[lsid] }); n > 0 {
		s.log.Debug("closed the cursors of ended sessions", zap.Int("sessions", len(ids)), zap.Int("cursors", n))
	}
}

// lsidOf converts a session id's bytes (see sessionID).
func lsidOf(b string) (session.ID, bool) {
	var id session.ID
	if len(b) != len(id) {
		return id, false
	}
	copy(id[:], b)
	return id, true
}

// startSession starts a new session: {id: {id: UUID}, timeoutMinutes}.
func (s *Server) startSession(_ context.Context, req *Request) (bson.Raw, error) {
	id, err := s.sessions.Start()
	if err != nil {
		return nil, err
	}
	idx, dst := req.beginReply()
	didx, dst := bsoncore.AppendDocumentElementStart(dst, "id")
	dst = bsoncore.AppendBinaryElement(dst, "id", bson.TypeBinaryUUID, id[:])
	dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
	dst = bsoncore.AppendInt32Element(dst, "timeoutMinutes", s.sessions.TimeoutMinutes())
	return req.endReply(idx, dst)
}

// endSessions ends the sessions it lists: their cursors close, and
// $listLocalSessions no longer shows them.
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
	s.sessions.End(plainIDs(ids))
	return noop(ctx, req)
}

// refreshSessions marks the sessions it lists used, starting those that
// are not live.
func (s *Server) refreshSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	ids, err := strictSessionList(req)
	if err != nil {
		return nil, err
	}
	for _, id := range plainIDs(ids) {
		if err := s.sessions.Use(id); err != nil {
			return nil, err
		}
	}
	return noop(ctx, req)
}

// killSessions kills the cursors and running commands of the sessions it
// lists, or of every session when the list is empty (every session is the
// unauthenticated user's). The sessions themselves live on.
func (s *Server) killSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	ids, err := sessionList(req.Name, req.Name, firstValue(req.Body))
	if err != nil {
		return nil, err
	}
	m := sessionMatch{all: len(ids) == 0, ids: map[string]bool{}}
	for _, id := range ids {
		m.ids[string(id.id[:])] = true
	}
	s.killMatching(req, m)
	return noop(ctx, req)
}

// killAllSessions kills the cursors and running commands of every session,
// or of the sessions of the users it lists: without authentication every
// session is the user {user: "", db: ""}'s.
func (s *Server) killAllSessions(ctx context.Context, req *Request) (bson.Raw, error) {
	users, err := docList(req.Name, req.Name, firstValue(req.Body))
	if err != nil {
		return nil, err
	}
	m := sessionMatch{all: len(users) == 0}
	for _, u := range users {
		unauthenticated, err := parseUser(req.Name+"."+req.Name, u, "user")
		if err != nil {
			return nil, err
		}
		m.all = m.all || unauthenticated
	}
	s.killMatching(req, m)
	return noop(ctx, req)
}

// killAllSessionsByPattern kills the cursors and running commands of the
// sessions any pattern matches: {} every one, {lsid} one, {uid} a user's.
// users and roles name whom to impersonate, which needs no check here.
func (s *Server) killAllSessionsByPattern(ctx context.Context, req *Request) (bson.Raw, error) {
	patterns, err := docList(req.Name, req.Name, firstValue(req.Body))
	if err != nil {
		return nil, err
	}
	m := sessionMatch{all: len(patterns) == 0, ids: map[string]bool{}}
	field := req.Name + "." + req.Name
	for _, p := range patterns {
		var lsid *lsidArg
		uid := noAuthDigest[:]
		for key, v := range fields(p) {
			switch string(key) {
			case "lsid":
				d, ok := v.DocumentOK()
				if !ok {
					return nil, wrongType(field, "lsid", v.Type, "object")
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
					if _, err := parseUser(field+"."+string(key), d, kind); err != nil {
						return nil, err
					}
				}
			default:
				return nil, unknownField(field, key)
			}
		}
		switch {
		case !bytes.Equal(uid, noAuthDigest[:]):
			// Another user's sessions: there are none.
		case lsid == nil:
			m.all = true
		case bytes.Equal(lsid.uid, noAuthDigest[:]):
			m.ids[string(lsid.id[:])] = true
		}
	}
	s.killMatching(req, m)
	return noop(ctx, req)
}

// sessionMatch says which sessions a kill command names.
type sessionMatch struct {
	all bool
	ids map[string]bool // session id bytes
}

func (m sessionMatch) match(lsid string) bool {
	return lsid != "" && (m.all || m.ids[lsid])
}

// killMatching kills the cursors and running commands of the matching
// sessions, but not the command doing the killing.
func (s *Server) killMatching(req *Request, m sessionMatch) {
	cursors := s.cursors.killSessions(m.match)
	s.net.mu.Lock()
	conns := make([]*Conn, 0, len(s.net.conns))
	for c := range s.net.conns {
		if c != req.Conn {
			conns = append(conns, c)
		}
	}
	s.net.mu.Unlock()
	ops := 0
	for _, c := range conns {
		if c.killSession(m.match) {
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

func plainIDs(ids []lsidArg) []session.ID {
	out := make([]session.ID, len(ids))
	for i, id := range ids {
		out[i] = id.id
	}
	return out
}

// strictSessionList reads the session list of endSessions and
// refreshSessions, whose parsers refuse any other argument.
func strictSessionList(req *Request) ([]lsidArg, error) {
	for key := range cmdArgs(req.Body) {
		return nil, unknownField(req.Name, key)
	}
	return sessionList(req.Name, req.Name, firstValue(req.Body))
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
		return nil, wrongType(cmd, field, v.Type, "array")
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid %s array: %v", field, err)
	}
	docs := make([]bson.Raw, 0, len(vals))
	for _, e := range vals {
		d, ok := e.DocumentOK()
		if !ok {
			return nil, wrongType(cmd, field, e.Type, "object")
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
	for key, v := range fields(doc) {
		var err error
		switch string(key) {
		case "id":
			err = argUUID(ctx, "id", v, out.id[:])
			haveID = true
		case "uid":
			out.uid, err = argSHA256(ctx, "uid", v)
		case "txnNumber":
			if v.Type != bson.TypeInt64 {
				err = wrongType(ctx, "txnNumber", v.Type, "long")
			}
			haveTxnNumber = true
		case "txnUUID":
			var u session.ID
			err = argUUID(ctx, "txnUUID", v, u[:])
			out.child = true
		default:
			err = unknownField(ctx, key)
		}
		if err != nil {
			return out, err
		}
	}
	switch {
	case !haveID:
		return out, missingField(ctx, "id")
	case needUID && out.uid == nil:
		return out, missingField(ctx, "uid")
	case haveTxnNumber && !out.child:
		return out, mongoerr.New(mongoerr.InvalidOptions, "Cannot specify txnNumber in lsid without specifying txnUUID")
	}
	return out, nil
}

// parseUser reads {user, db} (or {role, db}) and reports whether it names
// the unauthenticated user, the owner of every session here.
func parseUser(ctx string, doc bson.Raw, kind string) (bool, error) {
	var name, db string
	var haveName, haveDB bool
	for key, v := range fields(doc) {
		var err error
		switch string(key) {
		case kind:
			name, err = argString(ctx, kind, v)
			haveName = true
		case "db":
			db, err = argString(ctx, "db", v)
			haveDB = true
		default:
			err = unknownField(ctx, key)
		}
		if err != nil {
			return false, err
		}
	}
	switch {
	case !haveName:
		return false, missingField(ctx, kind)
	case !haveDB:
		return false, missingField(ctx, "db")
	}
	return kind == "user" && name == "" && db == "", nil
}

// argUUID reads a UUID (binary subtype 4 of 16 bytes) into dst.
func argUUID(ctx, field string, v bson.RawValue, dst []byte) error {
	subtype, data, ok := v.BinaryOK()
	switch {
	case !ok:
		return wrongType(ctx, field, v.Type, "binData")
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
		return nil, wrongType(ctx, field, v.Type, "binData")
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

// sessionID returns the id bytes of a command's lsid, "" when it has none.
func sessionID(body bson.Raw) string {
	v, err := body.LookupErr("lsid", "id")
	if err != nil {
		return ""
	}
	_, data, ok := v.BinaryOK()
	if !ok {
		return ""
	}
	return string(data)
}

// emptyUserDigest is the SHA-256 of the empty user name, base64: the user
// part of a session id when no user is authenticated.
const emptyUserDigest = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

// formatLsid writes a session id as MongoDB does in messages: the UUID, the
// user's digest and two empty parts for transactions.
func formatLsid(id string) string {
	b := []byte(id)
	if len(b) != 16 {
		return fmt.Sprintf("%x - %s -  - ", b, emptyUserDigest)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x - %s -  - ", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16], emptyUserDigest)
}
