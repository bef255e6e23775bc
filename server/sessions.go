package server

import (
	"context"
	"crypto/rand"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Lethe keeps no server-side session state beyond when each session was
// last used, which $listLocalSessions lists: without transactions or
// retryable-write bookkeeping there is nothing to attach to a session. The
// commands below answer as MongoDB does so that drivers and shells can
// manage their sessions, and lsid is accepted on every command.
func (s *Server) sessionCommands() []command {
	return []command{
		{name: "startSession", handle: startSession},
		{name: "endSessions", handle: s.endSessions},
		{name: "killSessions", handle: sessionList},
		{name: "refreshSessions", handle: sessionList},
		{name: "killAllSessions", handle: sessionList},
		{name: "killAllSessionsByPattern", handle: sessionList},
	}
}

// startSession returns a new session id, a random (version 4) UUID.
func startSession(_ context.Context, req *Request) (bson.Raw, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("server: session id: %w", err)
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	idx, dst := req.beginReply()
	didx, dst := bsoncore.AppendDocumentElementStart(dst, "id")
	dst = bsoncore.AppendBinaryElement(dst, "id", bson.TypeBinaryUUID, id[:])
	dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
	dst = bsoncore.AppendInt32Element(dst, "timeoutMinutes", sessionTimeoutMinutes)
	return req.endReply(idx, dst)
}

// sessionList answers the commands that take an array of sessions or
// patterns, checking only that they got an array.
func sessionList(ctx context.Context, req *Request) (bson.Raw, error) {
	v := req.Body.Index(0).Value()
	if _, isArray := v.ArrayOK(); !isArray {
		return nil, wrongType(req.Name, req.Name, v.Type, "array")
	}
	return noop(ctx, req)
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
