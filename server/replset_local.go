package server

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/concern"
	"github.com/lethedb/lethe/mongoerr"
)

// beforeAsMember checks the command's read and write concerns, waits for
// its afterClusterTime, and notes in req what the reply must say about its
// write concern (package concern).
func (s *Server) beforeAsMember(ctx context.Context, cmd *commandDef, req *Request) error {
	var err error
	req.wcError, err = concern.Before(ctx, s.ctime, cmd.name, req.Body)
	return err
}

// afterAsMember advances the cluster time after a write and adds the
// member's fields to the reply.
func (s *Server) afterAsMember(cmd *commandDef, req *Request, reply bson.Raw, ok bool) bson.Raw {
	return concern.After(s.ctime, cmd.name, ok, req.wcError, reply, &req.decorated)
}

// codeDropLiveOplog is MongoDB's unnamed code for dropping the oplog of a
// replica-set member (drop_collection.cpp, uassert 5255000).
const codeDropLiveOplog mongoerr.Code = 5255000

// guardReplicatedLocal makes a replica-set member keep its local database
// as mongod does: local.oplog.rs always exists there, so creating it is
// NamespaceExists, and neither it nor the local database may be dropped
// while the member replicates (src/mongo/db/commands/dbcommands.cpp,
// CmdDropDatabase; drop_collection.cpp; jstests/replsets/drop_oplog.js).
// A standalone server has no oplog by that name and keeps its ordinary
// answers.
func (s *Server) guardReplicatedLocal() {
	if s.rs == nil {
		return
	}
	s.wrapHandler("create", func(req *Request) error {
		if req.DB == "local" && command.FirstValue(req.Body).StringValue() == "oplog.rs" {
			return mongoerr.New(mongoerr.NamespaceExists, "Collection local.oplog.rs already exists.")
		}
		return nil
	})
	s.wrapHandler("drop", func(req *Request) error {
		if req.DB == "local" && command.FirstValue(req.Body).StringValue() == "oplog.rs" {
			return mongoerr.New(codeDropLiveOplog, "can't drop live oplog while replicating")
		}
		return nil
	})
	s.wrapHandler("dropDatabase", func(req *Request) error {
		if req.DB == "local" {
			return mongoerr.New(mongoerr.IllegalOperation, "Cannot drop 'local' database while replication is active")
		}
		return nil
	})
}
