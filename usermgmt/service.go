package usermgmt

import (
	"sync"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine"
)

// Config is what a Service needs of the server.
type Config struct {
	Engine *engine.Engine
	Logger *zap.Logger
	// ScramSHA1Iterations and ScramSHA256Iterations are the iteration
	// counts of the credentials createUser and updateUser derive; zero
	// means MongoDB's defaults.
	ScramSHA1Iterations, ScramSHA256Iterations int
	// Changed is called after every write to users or roles, so that the
	// server drops what it cached of them.
	Changed func()
}

// Service runs the user management commands over the engine and reads
// users and roles back for authentication (Store).
type Service struct {
	eng *engine.Engine
	log *zap.Logger
	cfg Config
	// umc runs the user management commands that write one at a time,
	// see serialized.
	umc sync.Mutex
}

// New returns the Service of cfg.Engine's users and roles.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Changed == nil {
		cfg.Changed = func() {}
	}
	return &Service{eng: cfg.Engine, log: cfg.Logger, cfg: cfg}
}

// usersChanged tells the server that users or roles changed.
func (s *Service) usersChanged() { s.cfg.Changed() }
