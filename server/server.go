// Package server speaks MongoDB's command protocol: package conn accepts
// connections and decodes wire messages, and the server, its Dispatcher,
// routes each command to its handler and builds the replies, with
// MongoDB's error codes.
//
// Locks, outermost first; none is held while taking one of an earlier rank:
//   - a session's checkout (package transaction), held by a command that
//     runs in a transaction or is a retryable write, for its whole run,
//     before any other lock; then, for a retryable write, its retryLocks
//     stripe (retry.go);
//   - usermgmt.Service's lock, held by a user management command for its
//     whole run, around the engine's own locks;
//   - a cursor's mutex, held by a getMore for its batch, then the table
//     of open cursors' (package cursor);
//   - netState.mu, the listener and the server's side of the open
//     connections (connection.go), never held while calling into package
//     conn except for the calls Start makes while it sets up;
//   - runningOp.mu, a connection's running command (currentOp, killOp);
//   - opContext.mu, the command's context (ops.go), which calls the
//     functions of the contexts made from it only after letting go;
//   - topology.mu and tickClock.mu, hello's topologyVersion and the cluster
//     time, and authState.mu, authentication's counters and cache: leaves
//     that no one holds while waiting;
//   - on a shared store, the router's (package router): readMu, held by one
//     hello across its read of the roster, which takes no lock of the
//     server's, then Router.mu and Clock.mu, leaves.
package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/auth"
	"github.com/lethedb/lethe/catalog"
	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/cursor"
	"github.com/lethedb/lethe/diag"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/expiry"
	"github.com/lethedb/lethe/failpoint"
	"github.com/lethedb/lethe/params"
	"github.com/lethedb/lethe/replset"
	"github.com/lethedb/lethe/router"
	"github.com/lethedb/lethe/session"
	"github.com/lethedb/lethe/shutdown"
	"github.com/lethedb/lethe/stats"
	"github.com/lethedb/lethe/sysns"
	"github.com/lethedb/lethe/tlsnet"
	"github.com/lethedb/lethe/transaction"
	"github.com/lethedb/lethe/usermgmt"
	"github.com/lethedb/lethe/wire"
)

// Version is Lethe's own version, reported beside the MongoDB version it mimics.
const Version = "0.1.0"

// Limit is a bound the server holds to that no flag changes, listed by
// lethe --help beside the flags.
type Limit struct {
	Name, Value string
}

// FixedLimits are the bounds no flag sets, MongoDB's unless noted.
func FixedLimits() []Limit {
	return []Limit{
		{"message size", fmt.Sprintf("%d bytes", wire.MaxMessageSize)},
		{"document size", fmt.Sprintf("%d MiB", maxBSONObjectSize>>20)},
		{"write batch", fmt.Sprintf("%d statements", maxWriteBatchSize)},
		{"blocking sort memory", "100 MiB held by a sort, $group or find's blocking sort; past it they spill to disk with allowDiskUse (the default, see allowDiskUseByDefault) and fail without (292)"},
		{"request memory", "256 MiB of documents held in memory by one query or aggregation, spilling or not (Lethe's; ExceededMemoryLimit)"},
		{"request temporary files", fmt.Sprintf("%d GiB per query or aggregation that spills, under <data-dir>/_tmp and removed when it ends, never taken from the free-space reserve (Lethe's; ExceededMemoryLimit, OutOfDiskSpace)", engine.DefaultQuerySpillLimit>>30)},
		{"expression value", fmt.Sprintf("%d MiB for any string, array or document an expression builds (BSONObjectTooLarge)", engine.MaxExpressionValueBytes>>20)},
		{"expression working set", fmt.Sprintf("%d MiB of values one expression holds at once (ExceededMemoryLimit)", engine.MaxExpressionHeldBytes>>20)},
		{"$push and $addToSet", "100 MiB per group (ExceededMemoryLimit)"},
		{"distinct reply", "16 MiB of values (17217)"},
		{"index and sort keys", "32 fields (13103)"},
		{"idle cursor timeout", cursor.IdleTimeout.String()},
		{"command time", "maxTimeMS of the command; none by default"},
		{"logical session timeout", fmt.Sprintf("a session unused for %d minutes ends, and its cursors close", int(session.DefaultTimeout/time.Minute))},
	}
}

// CursorLimits bound the cursors clients may keep open (cursor.Limits).
type CursorLimits = cursor.Limits

// Defaults of CursorLimits (package cursor).
const (
	DefaultMaxCursors               = cursor.DefaultMaxCursors
	DefaultMaxCursorsPerConn        = cursor.DefaultMaxCursorsPerConn
	DefaultMaxCursorMemory          = cursor.DefaultMaxCursorMemory
	DefaultMaxCursorsPerClient      = cursor.DefaultMaxCursorsPerClient
	DefaultMaxCursorMemoryPerClient = cursor.DefaultMaxCursorMemoryPerClient
)

// DefaultMessageTimeout is Config.MessageTimeout's default: ample for any
// message a live client sends, short enough that sockets which connect and
// then stall do not hold their connection slots for long.
const DefaultMessageTimeout = 30 * time.Second

// Config configures a Server.
type Config struct {
	Listen   string // host:port; port 0 picks a free one
	DataDir  string
	Logger   *zap.Logger
	Clock    clock.Clock // nil means the system clock
	MaxConns int         // 0 means no limit
	// MessageTimeout bounds how long a client may take to send its first
	// message after connecting, to send the rest of a message once its
	// first byte has arrived, and to take in a reply. Zero means
	// DefaultMessageTimeout; negative means no limit.
	MessageTimeout time.Duration
	// IdleTimeout closes a connection that has sent nothing for this long
	// and has no open cursor. Zero means never, as in MongoDB: drivers keep
	// pooled connections open indefinitely, and an operation that finds its
	// connection closed fails unless it can be retried.
	IdleTimeout time.Duration
	// Cursors bounds open cursors; zero fields take the defaults, negative
	// ones mean no limit.
	Cursors CursorLimits
	// ManualClock enables the advanceClock command; Clock must then be a
	// *clock.Manual.
	ManualClock bool
	// NoReaper leaves expired documents hidden in storage until dropped or
	// overwritten; tests use it to observe behaviour without purges.
	NoReaper bool
	// SortMemoryLimit bounds what a blocking sort or stage holds in
	// memory, past which it spills to disk with allowDiskUse and fails
	// without; QueryMemoryLimit bounds what one query or aggregation holds
	// in memory, and QuerySpillLimit what it keeps in temporary files. See
	// engine.Options.
	SortMemoryLimit, QueryMemoryLimit, QuerySpillLimit int64
	// CmdLine is what getCmdLineOpts reports.
	CmdLine []string
	// LogLevel, when set, is the level of Logger; setParameter logLevel
	// then changes it at run time.
	LogLevel *zap.AtomicLevel
	// MinFreeDisk is the free space, in bytes, kept on the data directory's
	// filesystem; see engine.Options.MinFreeDisk.
	MinFreeDisk int64
	// CacheSize is the store's block cache in bytes; DefaultCacheSize if
	// zero.
	CacheSize int64
	// NoOplog turns the oplog off (engine.Options.Oplog); it is on by
	// default. OplogMaxBytes bounds it, DefaultOplogMaxBytes if zero, no
	// bound if negative; OplogMaxAge bounds how long entries are kept,
	// none if zero.
	NoOplog       bool
	OplogMaxBytes int64
	OplogMaxAge   time.Duration
	// Disk, for tests, keeps the store on a simulated disk.
	Disk *pebblekv.MemDisk
	// Store, if set, is the store to run on instead of pebble in DataDir
	// (a TiKV cluster, or client-go's mock of one). Once New has opened
	// the engine on it, the engine closes it, on Shutdown or a failed New.
	Store kv.Store
	// SessionTimeout is how long a logical session lives after its last
	// use (MongoDB's localLogicalSessionTimeoutMinutes); zero means
	// session.DefaultTimeout. hello reports it in whole minutes.
	SessionTimeout time.Duration
	// MaxSessions bounds the logical sessions kept at once (MongoDB's
	// maxSessions), and MaxSessionsPerClient those of one client (a user,
	// or an address without access control; see principal.go); zero means
	// session.DefaultMax and a tenth of MaxSessions. Past either, new
	// sessions are refused with TooManyLogicalSessions.
	MaxSessions, MaxSessionsPerClient int
	// EnableTestCommands enables configureFailPoint, as mongod's
	// enableTestCommands parameter.
	EnableTestCommands bool
	// ReplSet, when set, is the name of the one-member replica set the
	// server presents itself as the primary of (mongod's --replSet); empty
	// means a standalone server. See package replset.
	ReplSet string
	// AdvertiseAddr is the host:port the replica set names its member by,
	// and the one published on the roster of the servers sharing a store
	// (engine.Members); empty means the address listened on.
	AdvertiseAddr string
	// MemberLease is how long this server's record on the roster of the
	// servers sharing a store holds without a renewal; the engine's
	// default if zero. Tests shorten it.
	MemberLease time.Duration
	// TLS, when set, serves TLS on the listening port as its mode says
	// (see package tlsnet); nil serves plain TCP only.
	TLS *tlsnet.Endpoint
	// Auth turns on access control (mongod's --auth). Without it, a
	// server listening on a non-loopback address logs a warning.
	Auth bool
	// ScramSHA1Iterations and ScramSHA256Iterations are the iteration
	// counts of the SCRAM credentials createUser and updateUser derive
	// (mongod's scramIterationCount and scramSHA256IterationCount); zero
	// means MongoDB's defaults. Credentials already stored keep theirs.
	ScramSHA1Iterations, ScramSHA256Iterations int
	// AuthMechanisms are the mechanisms clients may authenticate with
	// (mongod's authenticationMechanisms); nil means all of them.
	AuthMechanisms []auth.Mechanism
}

// Server is a running Lethe server.
type Server struct {
	cfg      Config
	log      *zap.Logger
	clock    clock.Clock
	eng      *engine.Engine
	started  time.Time
	commands map[string]*commandDef
	params   *params.Service // getParameter, setParameter and the values they set
	recent   *diag.LogRing   // recent log entries for getLog

	net netState // listener and connections, see connection.go
	// foreground is what clients run, which the TTL reaper yields to.
	foreground *foreground
	stats      stats.Counters // counters for serverStatus and the metrics (package stats)

	cursors  cursor.Table      // open cursors (package cursor)
	sessions *session.Registry // live sessions, see sessions.go
	retry    retryLocks        // retryable writes, see retry.go
	// txns are the sessions' multi-document transactions (package
	// transaction, txn.go).
	txns *transaction.Registry
	// sessionsDone closes when the session sweep has stopped.
	sessionsDone chan struct{}
	// failCommand is the failCommand fail point (package failpoint).
	failCommand *failpoint.FailCommand

	topo  *topology            // topologyVersion of hello, see hello_await.go
	rs    *replset.Set         // nil for a standalone server
	ctime replset.ClusterClock // the cluster time of a member or a router
	// router is the mongos-like face of a server sharing its store with
	// others (router.go); nil otherwise.
	router *router.Router

	// authz is authentication's shared state, see auth.go.
	authz *authState
	// stop answers shutdown and fsync, and says when a client asked the
	// process to stop (package shutdown).
	stop *shutdown.Service

	// users runs the user management commands and keeps users and roles
	// for authentication (package usermgmt).
	users *usermgmt.Service
	// catalog answers the catalog commands (package catalog).
	catalog *catalog.Service
	// expiry answers advanceClock and counts the reaper's work for
	// serverStatus (package expiry).
	expiry *expiry.Service
	// stopClock ends the syncing of a clock that follows the store's
	// shared time (storeClock).
	stopClock func()
}

// clockSync is how often a clock that follows the store's shared time
// measures its offset again.
const clockSync = time.Second

// storeClock is the clock of a server given none: the wall clock, or over
// a store with a shared time (TiKV's timestamp oracle) a clock that
// follows it, so that front-ends on several machines decide expiry by one
// time. stop ends its syncing.
func storeClock(store kv.Store, log *zap.Logger) (c clock.Clock, stop func(), err error) {
	shared, ok := kv.Unwrap(store).(kv.SharedClock)
	if !ok {
		return clock.System{}, func() {}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	synced, err := clock.NewSynced(ctx, shared.PhysicalTime)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		synced.Run(ctx, clockSync, func(err error) {
			log.Warn("the store's time could not be read; the clock keeps its last offset", zap.Error(err))
		})
	}()
	return synced, func() { cancel(); <-done }, nil
}

// New opens the store and prepares the command table. Call Start to listen.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	// The store's shared time decides expiry when no clock is given, and
	// always judges the leases of the servers sharing the store: a test's
	// manual clock must not expire them.
	shared, stopClock, err := storeClock(cfg.Store, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = shared
	}
	switch {
	case cfg.MessageTimeout == 0:
		cfg.MessageTimeout = DefaultMessageTimeout
	case cfg.MessageTimeout < 0:
		cfg.MessageTimeout = 0
	}
	cfg.IdleTimeout = max(cfg.IdleTimeout, 0)
	if n := cfg.ScramSHA1Iterations; n != 0 && n < auth.MinSHA1Iterations {
		return nil, fmt.Errorf("server: %d SCRAM-SHA-1 iterations, fewer than the least MongoDB accepts (%d)", n, auth.MinSHA1Iterations)
	}
	if n := cfg.ScramSHA256Iterations; n != 0 && n < auth.MinSHA256Iterations {
		return nil, fmt.Errorf("server: %d SCRAM-SHA-256 iterations, fewer than the least MongoDB accepts (%d)", n, auth.MinSHA256Iterations)
	}
	if cfg.AuthMechanisms != nil {
		if len(cfg.AuthMechanisms) == 0 {
			return nil, fmt.Errorf("server: no authentication mechanism enabled")
		}
		for _, m := range cfg.AuthMechanisms {
			if !slices.Contains(allMechanisms, m) {
				return nil, fmt.Errorf("server: unknown authentication mechanism %q; Lethe has %v", m, allMechanisms)
			}
		}
	}
	cfg.Cursors.SetDefaults()
	if cfg.ManualClock {
		if _, ok := cfg.Clock.(*clock.Manual); !ok {
			return nil, fmt.Errorf("server: ManualClock needs a *clock.Manual")
		}
	}
	recent := diag.NewLogRing(diag.RecentLogEntries)
	log := cfg.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewTee(c, recent.Core())
	}))
	fg := new(foreground)
	eng, err := engine.Open(cfg.DataDir, engine.Options{Clock: cfg.Clock, Logger: log, NoReaper: cfg.NoReaper,
		Foreground:      fg.busy,
		SortMemoryLimit: cfg.SortMemoryLimit, QueryMemoryLimit: cfg.QueryMemoryLimit, QuerySpillLimit: cfg.QuerySpillLimit,
		MinFreeDisk: cfg.MinFreeDisk, CacheSize: cfg.CacheSize, Disk: cfg.Disk, Store: cfg.Store,
		Oplog: !cfg.NoOplog, OplogMaxBytes: oplogMaxBytes(cfg.OplogMaxBytes), OplogMaxAge: cfg.OplogMaxAge,
		Cluster: engine.ClusterOptions{Advertise: cfg.AdvertiseAddr, Lease: cfg.MemberLease, Now: shared.Now}})
	if err != nil {
		stopClock()
		return nil, fmt.Errorf("server: open store: %w", err)
	}
	s := &Server{stopClock: stopClock, cfg: cfg, log: log, clock: cfg.Clock, eng: eng, started: time.Now(), recent: recent, authz: newAuthState(), foreground: fg,
		stop: shutdown.New(shutdown.Config{Logger: log, Auth: cfg.Auth}), failCommand: failpoint.New(log)}
	s.cursors.Configure(cursor.Config{Limits: cfg.Cursors, Auth: cfg.Auth, FormatLsid: formatLsid})
	s.sessions = session.New(session.Options{Timeout: cfg.SessionTimeout,
		Max: cfg.MaxSessions, MaxPerClient: cfg.MaxSessionsPerClient, Clock: cfg.Clock, Gone: s.sessionsGone})
	s.topo = newTopology()
	if cfg.ReplSet != "" || eng.Member() != nil {
		if cfg.NoOplog {
			s.ctime = replset.NewTickClock(cfg.Clock)
		} else {
			s.ctime = replset.OplogClock{Engine: eng, Wall: cfg.Clock}
		}
	}
	if cfg.ReplSet != "" {
		s.rs = replset.New(cfg.ReplSet, s.ctime, s.clock)
	} else if eng.Member() != nil {
		s.startRouter()
	}
	s.users = usermgmt.New(usermgmt.Config{Engine: eng, Logger: log,
		ScramSHA1Iterations: cfg.ScramSHA1Iterations, ScramSHA256Iterations: cfg.ScramSHA256Iterations,
		Changed: s.usersChanged})
	var manual *clock.Manual
	if cfg.ManualClock {
		manual = cfg.Clock.(*clock.Manual) // checked above
	}
	s.catalog = catalog.New(catalog.Config{Engine: eng, Clock: cfg.Clock, Cursors: &s.cursors})
	s.expiry = expiry.New(expiry.Config{Engine: eng, ManualClock: manual})
	mechanisms := make([]string, 0, len(s.authMechanisms()))
	for _, m := range s.authMechanisms() {
		mechanisms = append(mechanisms, string(m))
	}
	s.params = params.New(params.Config{Logger: log, LogLevel: cfg.LogLevel, FeatureCompatibilityVersion: fcvVersion,
		AuthSchemaVersion: int32(usermgmt.SchemaVersion), AuthenticationMechanisms: mechanisms,
		SessionTimeoutMinutes: s.sessions.TimeoutMinutes(), CursorIdleTimeout: cursor.IdleTimeout})
	// Transactions' lifetimes run on the wall clock, as mongod's do on
	// its precise clock source: they bound resources held, not document
	// time, which a manual clock stands still for.
	s.txns = transaction.New(transaction.Config{Engine: eng, Logger: log,
		Lifetime: s.params.TransactionLifetime, LockTimeout: s.params.TransactionLockTimeout, Ended: s.transactionEnded})
	s.commands = s.buildRegistry()
	// The system.* guards first, so that a replica-set member's own guards
	// of the local database run before them.
	for name, guard := range sysns.Guards([]string{usermgmt.DB + "." + usermgmt.UsersCollection, usermgmt.DB + "." + usermgmt.RolesCollection}) {
		s.wrapHandler(name, func(req *Request) error { return guard(&req.Request) })
	}
	s.guardReplicatedLocal()
	s.guardViews()
	s.carryCollation()
	if err := s.users.UpgradeSchema(); err != nil {
		stopClock()
		return nil, errors.Join(err, eng.Close())
	}
	if cfg.EnableTestCommands {
		log.Warn("test commands are enabled (configureFailPoint): use this for tests only")
	}
	if cfg.ManualClock {
		log.Warn("the clock is manual: time moves only through advanceClock; use this for tests only")
	}
	return s, nil
}

// DefaultOplogMaxBytes bounds the oplog when Config does not: mongod's
// smallest default oplog, 990 MB, rounded up.
const DefaultOplogMaxBytes = 1 << 30

// DefaultCacheSize is the store's block cache when Config.CacheSize is
// zero.
const DefaultCacheSize = 256 << 20

func oplogMaxBytes(n int64) int64 {
	switch {
	case n == 0:
		return DefaultOplogMaxBytes
	case n < 0:
		return 0
	}
	return n
}

// ShutdownRequested is closed when a client has run the shutdown command;
// the process should then call Shutdown.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.stop.Requested() }
