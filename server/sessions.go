package server

import (
	"context"
	"crypto/rand"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Lethe keeps no server-side session state: without transactions or
// retryable-write bookkeeping there is nothing to attach to a session. The
// commands below answer as MongoDB does so that drivers and shells can
// manage their sessions, and lsid is accepted on every command.
func (s *Server) sessionCommands() []command {
	return []command{
		{name: "startSession", handle: startSession},
		{name: "endSessions", handle: sessionList},
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
