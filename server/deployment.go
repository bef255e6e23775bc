package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// Commands about replication that tools and the shell's helpers
// (rs.status(), rs.conf()) send; they are in replset.go. The user
// commands are in usermgmt.go.
func (s *Server) deploymentCommands() []commandDef {
	return s.replicationCommands()
}

func notReplicated(context.Context, *Request) (bson.Raw, error) {
	return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
}
