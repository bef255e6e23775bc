// Package server speaks MongoDB's command protocol over TCP: it accepts
// connections, decodes wire messages, routes each command to its handler and
// encodes the replies, with MongoDB's error codes.
package server

import (
	"fmt"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/ttlindex"
)

// Version is Lethe's own version, reported beside the MongoDB version it mimics.
const Version = "0.1.0"

// Config configures a Server.
type Config struct {
	Listen   string // host:port; port 0 picks a free one
	DataDir  string
	Logger   *zap.Logger
	Clock    ttlindex.Clock // nil means the system clock
	MaxConns int            // 0 means no limit
	// ManualClock enables the advanceClock command; Clock must then be a
	// *ttlindex.ManualClock.
	ManualClock bool
	// NoReaper leaves expired documents hidden in storage until dropped or
	// overwritten; tests use it to observe behaviour without purges.
	NoReaper bool
	// CmdLine is what getCmdLineOpts reports.
	CmdLine []string
	// LogLevel, when set, is the level of Logger; setParameter logLevel
	// then changes it at run time.
	LogLevel *zap.AtomicLevel
	// MinFreeDisk is the free space, in bytes, kept on the data directory's
	// filesystem; see engine.Options.MinFreeDisk.
	MinFreeDisk int64
	// Disk, for tests, keeps the store on a simulated disk.
	Disk *engine.MemDisk
}

// Server is a running Lethe server.
type Server struct {
	cfg      Config
	log      *zap.Logger
	clock    ttlindex.Clock
	eng      *engine.Engine
	started  time.Time
	commands map[string]*command
	params   map[string]*parameter // getParameter and setParameter, see params.go
	recent   *logRing              // recent log entries for getLog, see logring.go

	net   netState // listener and connections, see listener.go
	stats stats    // counters for serverStatus, see stats.go

	cursors cursorTable // open cursors, see cursors.go
}

// New opens the store and prepares the command table. Call Start to listen.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Clock == nil {
		cfg.Clock = ttlindex.SystemClock{}
	}
	if cfg.ManualClock {
		if _, ok := cfg.Clock.(*ttlindex.ManualClock); !ok {
			return nil, fmt.Errorf("server: ManualClock needs a *ttlindex.ManualClock")
		}
	}
	recent := newLogRing(recentLogEntries)
	log := cfg.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, recent.core())
	}))
	eng, err := engine.Open(cfg.DataDir, engine.Options{Clock: cfg.Clock, Logger: log, NoReaper: cfg.NoReaper,
		MinFreeDisk: cfg.MinFreeDisk, Disk: cfg.Disk})
	if err != nil {
		return nil, fmt.Errorf("server: open store: %w", err)
	}
	s := &Server{cfg: cfg, log: log, clock: cfg.Clock, eng: eng, started: time.Now(), recent: recent}
	s.commands = s.buildRegistry()
	s.params = s.buildParameters()
	if cfg.ManualClock {
		log.Warn("the clock is manual: time moves only through advanceClock; use this for tests only")
	}
	return s, nil
}
