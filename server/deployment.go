package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// Commands about replication that tools and the shell's helpers
// (rs.status(), rs.conf()) send; a replica set answers them (package
// replset). The user commands are in package usermgmt.
func (s *Server) deploymentCommands() []commandDef {
	return s.replicationCommands()
}

func notReplicated(context.Context, *Request) (bson.Raw, error) {
	return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
}

// replicationCommands are the commands of rs.status(), rs.conf() and
// rs.initiate(): answered as a one-member set in replica-set mode, and with
// NoReplicationEnabled by a standalone server, as mongod without --replSet.
func (s *Server) replicationCommands() []commandDef {
	if s.rs == nil {
		return []commandDef{
			{name: "replSetGetStatus", handle: notReplicated, adminOnly: true},
			{name: "replSetGetConfig", handle: notReplicated, adminOnly: true},
			{name: "replSetInitiate", handle: initiateNotReplicated, adminOnly: true},
		}
	}
	return kitCommands(s.rs.Commands())
}

func initiateNotReplicated(context.Context, *Request) (bson.Raw, error) {
	return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "This node was not started with replication enabled.")
}

// replStatusSection is serverStatus's repl section: what isMaster says of
// the set, and the rollback id, as mongod reports it.
func (s *Server) replStatusSection() bson.Raw {
	counter, _, _ := s.topo.current()
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = s.topo.append(dst, counter)
	dst = s.rs.AppendHello(dst, true)
	dst = bsoncore.AppendInt32Element(dst, "rbid", 1)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
