package server

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// The shutdown and fsync commands. shutdown asks the process that runs the
// server to stop it (ShutdownRequested), the way a signal does, so that the
// process shuts down through its one path; fsync has nothing to force, as
// every acknowledged write has already synced its log.

// shutdownRequest is closed once when a client runs shutdown.
type shutdownRequest struct {
	once sync.Once
	ch   chan struct{}
}

// ShutdownRequested is closed when a client has run the shutdown command;
// the process should then call Shutdown.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdownReq.ch }

func (s *Server) shutdownCommands() []commandDef {
	return []commandDef{
		{name: "shutdown", handle: s.shutdownCmd, adminOnly: true},
		{name: "fsync", handle: s.fsync, adminOnly: true},
	}
}

func (s *Server) shutdownCmd(_ context.Context, req *Request) (bson.Raw, error) {
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
	if !s.cfg.Auth && !isLoopback(req.Conn.remote) {
		return nil, mongoerr.New(mongoerr.Unauthorized, "shutdown must run from localhost when running db without auth")
	}
	s.log.Info("shutdown requested by a client", zap.Int64("conn", req.Conn.id), zap.String("remote", req.Conn.remote),
		zap.String("user", req.Conn.userKey()))
	s.shutdownReq.once.Do(func() { close(s.shutdownReq.ch) })
	return command.OK()
}

func (s *Server) fsync(_ context.Context, req *Request) (bson.Raw, error) {
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
