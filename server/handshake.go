package server

import (
	"context"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/wire"
)

// Limits and versions a client learns from hello. Wire version 21 is MongoDB
// 7.0, the version Lethe presents itself as.
const (
	maxBSONObjectSize = 16 * 1024 * 1024
	maxWriteBatchSize = 100_000
	minWireVersion    = 0
	maxWireVersion    = 21
	mongoVersion      = "7.0.0"
	fcvVersion        = "7.0" // featureCompatibilityVersion
)

func (s *Server) handshakeCommands() []command {
	return []command{
		{name: "hello", aliases: []string{"isMaster", "ismaster"}, handle: s.hello},
		{name: "saslStart", handle: authNotSupported},
		{name: "saslContinue", handle: authNotSupported},
		{name: "authenticate", handle: authNotSupported},
		{name: "logout", handle: noop},
	}
}

// hello describes the server to a driver, which calls it on every new
// connection and then periodically to monitor the server. The first call
// also negotiates compression for the connection.
func (s *Server) hello(_ context.Context, req *Request) (bson.Raw, error) {
	var helloOk bool
	var offered bson.RawArray
	for key, v := range cmdArgs(req.Body) {
		var err error
		switch string(key) {
		case "helloOk":
			helloOk, err = argBool(req.Name, "helloOk", v)
		case "compression":
			offered, err = argArray(req.Name, "compression", v)
		case "client":
			var meta bson.Raw
			if meta, err = argDoc(req.Name, "client", v); err == nil {
				req.Conn.appName, _ = meta.Lookup("application", "name").StringValueOK()
				s.log.Info("client metadata", zap.Int64("conn", req.Conn.id), zap.String("remote", req.Conn.remote),
					zap.Stringer("doc", meta))
			}
		}
		// Other fields (saslSupportedMechs, speculativeAuthenticate,
		// topologyVersion, loadBalanced...) ask for features Lethe does not
		// have; as with MongoDB, the reply simply lacks them.
		if err != nil {
			return nil, err
		}
	}

	idx, dst := req.beginReply()
	if req.Name == "hello" {
		dst = bsoncore.AppendBooleanElement(dst, "isWritablePrimary", true)
	} else {
		dst = bsoncore.AppendBooleanElement(dst, "ismaster", true)
	}
	if helloOk {
		dst = bsoncore.AppendBooleanElement(dst, "helloOk", true)
	}
	dst = bsoncore.AppendInt32Element(dst, "maxBsonObjectSize", maxBSONObjectSize)
	dst = bsoncore.AppendInt32Element(dst, "maxMessageSizeBytes", wire.MaxMessageSize)
	dst = bsoncore.AppendInt32Element(dst, "maxWriteBatchSize", maxWriteBatchSize)
	dst = bsoncore.AppendTimeElement(dst, "localTime", s.clock.Now())
	dst = bsoncore.AppendInt32Element(dst, "logicalSessionTimeoutMinutes", s.sessions.TimeoutMinutes())
	dst = appendNumberElement(dst, "connectionId", req.Conn.id)
	dst = bsoncore.AppendInt32Element(dst, "minWireVersion", minWireVersion)
	dst = bsoncore.AppendInt32Element(dst, "maxWireVersion", maxWireVersion)
	dst = bsoncore.AppendBooleanElement(dst, "readOnly", false)
	if offered != nil {
		dst = req.Conn.negotiateCompression(dst, offered)
	}
	return req.endReply(idx, dst)
}

// negotiateCompression keeps the compressors of the client's list that this
// server has, in the client's order, and appends them to the hello reply as
// "compression".
func (c *Conn) negotiateCompression(dst []byte, offered bson.RawArray) []byte {
	c.compressors = c.compressors[:0]
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "compression")
	values, _ := offered.Values() // validated by the wire layer
	for _, v := range values {
		name, ok := v.StringValueOK()
		if !ok {
			continue
		}
		comp, ok := wire.CompressorByName(name)
		if !ok || c.negotiated(comp) {
			continue
		}
		dst = bsoncore.AppendStringElement(dst, strconv.Itoa(len(c.compressors)), name)
		c.compressors = append(c.compressors, comp)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	if len(c.compressors) > 0 {
		c.srv.log.Debug("compression negotiated", zap.Int64("conn", c.id), zap.Stringers("compressors", c.compressors))
	}
	return dst
}

func authNotSupported(context.Context, *Request) (bson.Raw, error) {
	return nil, mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed: Lethe does not support authentication; connect without credentials")
}

// noop is the handler of commands that have nothing to do on this server.
func noop(_ context.Context, req *Request) (bson.Raw, error) {
	idx, dst := req.beginReply()
	return req.endReply(idx, dst)
}

// appendNumberElement appends n as an int32 when it fits and an int64
// otherwise, as MongoDB does for counters such as connectionId.
func appendNumberElement(dst []byte, key string, n int64) []byte {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return bsoncore.AppendInt32Element(dst, key, int32(n))
	}
	return bsoncore.AppendInt64Element(dst, key, n)
}
