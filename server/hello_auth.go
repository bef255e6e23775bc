package server

import (
	"context"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/bsonvalue"
)

// hello's part in authentication: which mechanisms a user may use
// (saslSupportedMechs), and the first step of the conversation carried in
// the handshake itself (speculativeAuthenticate), which saves drivers a
// round trip per connection.

// appendSupportedMechs appends saslSupportedMechs for "db.user", or
// nothing when there is no such user, as MongoDB does.
func (s *Server) appendSupportedMechs(ctx context.Context, dst []byte, dbUser string) []byte {
	db, user, ok := strings.Cut(dbUser, ".")
	if !ok {
		return dst
	}
	u, err := s.users.Store().User(ctx, db, user)
	if err != nil || u == nil {
		return dst
	}
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "saslSupportedMechs")
	i := 0
	for _, m := range []auth.Mechanism{auth.ScramSHA1, auth.ScramSHA256} {
		if _, ok := u.Credentials[m]; ok && s.mechanismEnabled(m) {
			dst = bsoncore.AppendStringElement(dst, strconv.Itoa(i), string(m))
			i++
		}
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// appendSpeculativeAuth runs the first step of the conversation in doc and
// appends its answer as speculativeAuthenticate. A failure leaves the field
// out: the driver then authenticates the long way and gets the error there.
func (s *Server) appendSpeculativeAuth(ctx context.Context, req *Request, dst []byte, doc bson.Raw) []byte {
	first := bsonvalue.FirstKeyBytes(doc)
	db, _ := doc.Lookup("db").StringValueOK()
	if db == "" && string(first) == "authenticate" {
		// The drivers' MONGODB-X509 message names no database: MongoDB
		// takes $external (doSpeculativeAuthenticate in its source).
		db = auth.ExternalDB
	}
	if db == "" {
		return dst
	}
	// The conversation belongs to the named database, not hello's.
	saved := req.DB
	req.DB = db
	defer func() { req.DB = saved }()
	switch string(first) {
	case "saslStart":
		args, err := parseSaslStart("saslStart", doc, true)
		if err != nil {
			return dst
		}
		payload, done, err := s.startConversation(ctx, req, args, true)
		if err != nil {
			s.log.Debug("speculative authentication failed", zap.Int64("conn", req.Conn.id), zap.Error(err))
			return dst
		}
		didx, dst := bsoncore.AppendDocumentElementStart(dst, "speculativeAuthenticate")
		dst = bsoncore.AppendInt32Element(dst, "conversationId", conversationID)
		dst = bsoncore.AppendBooleanElement(dst, "done", done)
		dst = bsoncore.AppendBinaryElement(dst, "payload", 0, payload)
		dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
		return dst
	case "authenticate":
		mech, _ := doc.Lookup("mechanism").StringValueOK()
		user, _ := doc.Lookup("user").StringValueOK()
		name, err := s.authenticateX509(ctx, req, auth.Mechanism(mech), user, true)
		if err != nil {
			return dst
		}
		didx, dst := bsoncore.AppendDocumentElementStart(dst, "speculativeAuthenticate")
		dst = bsoncore.AppendStringElement(dst, "dbname", auth.ExternalDB)
		dst = bsoncore.AppendStringElement(dst, "user", name)
		dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
		return dst
	}
	return dst
}
