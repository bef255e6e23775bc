package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// Commands about users, replication and running operations that tools and
// the shell's helpers (show users, rs.status(), db.currentOp()) send. Lethe
// has no authentication, and answers as such a MongoDB would; the
// replication commands are in replset.go.
func (s *Server) deploymentCommands() []command {
	return append([]command{
		{name: "usersInfo", handle: emptyList("users")},
		{name: "rolesInfo", handle: emptyList("roles")},
	}, s.replicationCommands()...)
}

func emptyList(field string) handlerFunc {
	return func(context.Context, *Request) (bson.Raw, error) {
		return okReply(bson.E{Key: field, Value: bson.A{}})
	}
}

func notReplicated(context.Context, *Request) (bson.Raw, error) {
	return nil, mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
}
