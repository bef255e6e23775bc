package server

import (
	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
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

func (s *Server) handshakeCommands() []commandDef {
	return []commandDef{
		{name: "hello", aliases: []string{"isMaster", "ismaster"}, handle: s.hello},
	}
}

// hello describes the server to a driver, which calls it on every new
// connection and then to monitor the server, awaitable (see
// hello_await.go). The first call also negotiates compression for the
// connection.
func (s *Server) hello(ctx context.Context, req *Request) (bson.Raw, error) {
	var helloOk bool
	var offered bson.RawArray
	var aw awaitArgs
	var mechsOf string
	var speculative bson.Raw
	for key, v := range command.Args(req.Body) {
		var err error
		switch string(key) {
		case "helloOk":
			helloOk, err = command.Bool(req.Name, "helloOk", v)
		case "compression":
			offered, err = command.Array(req.Name, "compression", v)
		case "client":
			var meta bson.Raw
			if meta, err = command.Doc(req.Name, "client", v); err == nil {
				req.Conn.appName, _ = meta.Lookup("application", "name").StringValueOK()
				s.log.Info("client metadata", zap.Int64("conn", req.Conn.id), zap.String("remote", req.Conn.remote),
					zap.Stringer("doc", meta))
			}
		case "topologyVersion":
			err = s.parseTopologyVersion(&aw, req.Name, v)
		case "maxAwaitTimeMS":
			err = s.parseMaxAwait(&aw, req.Name, v)
		case "awaitable":
			aw.awaitable, err = command.Bool(req.Name, "awaitable", v)
		case "saslSupportedMechs":
			mechsOf, err = command.String(req.Name, "saslSupportedMechs", v)
		case "speculativeAuthenticate":
			speculative, err = command.Doc(req.Name, "speculativeAuthenticate", v)
		}
		// Other fields (loadBalanced...) ask for features Lethe does not
		// have; as with MongoDB, the reply simply lacks them.
		if err != nil {
			return nil, err
		}
	}
	if req.streamFrom >= 0 {
		// A streamed reply follows the last one: wait from what it said.
		aw.processID, aw.counter = s.topo.processID, req.streamFrom
	}
	counter, awaited, err := s.await(ctx, req.Conn, &aw)
	if err != nil {
		return nil, err
	}
	if awaited && req.exhaustAllowed {
		req.streamNext = counter
	}

	legacy := req.Name != "hello"
	idx, dst := req.BeginReply()
	switch {
	case s.rs != nil:
		dst = s.topo.append(dst, counter)
		dst = s.rs.AppendHello(dst, legacy)
	case s.router != nil:
		dst = s.router.AppendHello(dst, legacy)
		dst = s.topo.append(dst, counter)
	default:
		if legacy {
			dst = bsoncore.AppendBooleanElement(dst, "ismaster", true)
		} else {
			dst = bsoncore.AppendBooleanElement(dst, "isWritablePrimary", true)
		}
		dst = s.topo.append(dst, counter)
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
	if s.router != nil {
		// A mongos's order, and no readOnly (cluster_hello_cmd.cpp); then
		// Lethe's list of the servers sharing the store.
		dst = bsoncore.AppendInt32Element(dst, "maxWireVersion", maxWireVersion)
		dst = bsoncore.AppendInt32Element(dst, "minWireVersion", minWireVersion)
		dst = s.router.AppendHosts(ctx, dst)
	} else {
		dst = bsoncore.AppendInt32Element(dst, "minWireVersion", minWireVersion)
		dst = bsoncore.AppendInt32Element(dst, "maxWireVersion", maxWireVersion)
		dst = bsoncore.AppendBooleanElement(dst, "readOnly", false)
	}
	if offered != nil {
		dst = req.Conn.negotiateCompression(dst, offered)
	}
	if mechsOf != "" {
		dst = s.appendSupportedMechs(ctx, dst, mechsOf)
	}
	if speculative != nil {
		dst = s.appendSpeculativeAuth(ctx, req, dst, speculative)
	}
	return req.EndReply(idx, dst)
}

// noop is the handler of commands that have nothing to do on this server.
func noop(_ context.Context, req *Request) (bson.Raw, error) {
	idx, dst := req.BeginReply()
	return req.EndReply(idx, dst)
}

// appendNumberElement appends n as an int32 when it fits and an int64
// otherwise, as MongoDB does for counters such as connectionId.
func appendNumberElement(dst []byte, key string, n int64) []byte {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return bsoncore.AppendInt32Element(dst, key, int32(n))
	}
	return bsoncore.AppendInt64Element(dst, key, n)
}
