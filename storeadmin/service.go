package storeadmin

import (
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
)

// Config is what the commands need of the server.
type Config struct {
	Engine *engine.Engine
	// Auth says access control is on: dataSize then sizes only
	// collections of the database its privileges were checked on.
	Auth bool
	// ReplicaSet says the server is a replica set's member, or a router
	// (a mongos, as Lethe's servers sharing a store are); cluster
	// parameters exist only there.
	ReplicaSet bool
}

// Service answers the commands that administer the store rather than
// read or write documents.
type Service struct {
	eng *engine.Engine
	cfg Config
}

// New returns the Service of cfg.Engine.
func New(cfg Config) *Service { return &Service{eng: cfg.Engine, cfg: cfg} }

// Commands are dataSize, compact and the cluster parameter commands, for
// the server's registry.
func (s *Service) Commands() []command.Command {
	return []command.Command{
		{Name: "dataSize", Aliases: []string{"datasize"}, Handle: s.dataSize},
		{Name: "compact", Handle: s.compact},
		{Name: "setClusterParameter", Handle: s.setClusterParameter, AdminOnly: true},
		{Name: "getClusterParameter", Handle: s.getClusterParameter, AdminOnly: true},
	}
}
