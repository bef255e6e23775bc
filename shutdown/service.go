package shutdown

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// Config is what the commands need of the server.
type Config struct {
	Logger *zap.Logger
	// Auth says access control is on: the shutdown privilege then decides
	// who may stop the server, instead of being on this machine.
	Auth bool
}

// Caller is the client that runs shutdown, which the command kit's
// request does not carry: the server says it.
type Caller struct {
	ConnID int64
	Remote string
	// User is the authenticated user, for the log line; "" for none.
	User string
	// Loopback says Remote is on this machine.
	Loopback bool
}

// Service answers shutdown and fsync.
type Service struct {
	log  *zap.Logger
	auth bool
	// once closes requested when a client first runs shutdown.
	once      sync.Once
	requested chan struct{}
}

// New returns a Service whose shutdown has not been requested.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Service{log: cfg.Logger, auth: cfg.Auth, requested: make(chan struct{})}
}

// Requested is closed when a client has run the shutdown command; the
// process should then shut the server down.
func (s *Service) Requested() <-chan struct{} { return s.requested }

// Commands are fsync, for the server's registry. shutdown needs its
// Caller, so the server registers Shutdown itself.
func (s *Service) Commands() []command.Command {
	return []command.Command{{Name: "fsync", Handle: s.fsync, AdminOnly: true}}
}

// Shutdown runs the shutdown command of from.
func (s *Service) Shutdown(_ context.Context, req *command.Request, from Caller) (bson.Raw, error) {
	for key, v := range command.Args(req.Body) {
		var err error
		switch string(key) {
		case "force":
			_, err = command.Bool(req.Name, "force", v)
		case "timeoutSecs":
			_, err = command.Int64(req.Name, "timeoutSecs", v)
		default:
			err = command.UnknownField(req.Name, key)
		}
		if err != nil {
			return nil, err
		}
	}
	// Without access control, only a client on this machine may stop the
	// server, as in MongoDB; with it, the shutdown privilege decides.
	if !s.auth && !from.Loopback {
		return nil, mongoerr.New(mongoerr.Unauthorized, "shutdown must run from localhost when running db without auth")
	}
	s.log.Info("shutdown requested by a client", zap.Int64("conn", from.ConnID), zap.String("remote", from.Remote),
		zap.String("user", from.User))
	s.once.Do(func() { close(s.requested) })
	return command.OK()
}

func (s *Service) fsync(_ context.Context, req *command.Request) (bson.Raw, error) {
	for key, v := range command.Args(req.Body) {
		var err error
		switch string(key) {
		case "lock":
			var lock bool
			if lock, err = command.Bool(req.Name, "lock", v); err == nil && lock {
				err = mongoerr.New(mongoerr.CommandNotSupported, "fsync with lock is not supported by Lethe: back up with mongodump, or stop the server and copy its data directory")
			}
		case "async":
			_, err = command.Bool(req.Name, "async", v)
		default:
			err = command.UnknownField(req.Name, key)
		}
		if err != nil {
			return nil, err
		}
	}
	return command.OK(bson.E{Key: "numFiles", Value: int32(1)})
}
