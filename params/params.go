package params

import (
	"sort"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

// Config is what the parameters report of the server.
type Config struct {
	// Logger is the server's logger, whose level logLevel reports.
	Logger *zap.Logger
	// LogLevel, when set, is the level of Logger; setParameter logLevel
	// changes it. Without it logLevel cannot be set at run time.
	LogLevel *zap.AtomicLevel
	// FeatureCompatibilityVersion is the version featureCompatibilityVersion
	// reports.
	FeatureCompatibilityVersion string
	// AuthSchemaVersion is the users' schema version; mongodump and
	// mongorestore check it before carrying users.
	AuthSchemaVersion int32
	// AuthenticationMechanisms are the mechanisms clients may use, set at
	// startup only, as in MongoDB.
	AuthenticationMechanisms []string
	// SessionTimeoutMinutes is localLogicalSessionTimeoutMinutes, set at
	// startup only, as in MongoDB.
	SessionTimeoutMinutes int32
	// CursorIdleTimeout is how long an idle cursor lives
	// (cursorTimeoutMillis).
	CursorIdleTimeout time.Duration
}

// parameter is a server parameter of getParameter and setParameter.
type parameter struct {
	get func() any
	// set changes the value at run time; nil if it cannot be changed.
	set func(cmd, name string, v bson.RawValue) error
	// startup says a command-line flag sets it, for getParameter's
	// showDetails (settableAtStartup).
	startup bool
}

// Service holds the parameters and answers getParameter and setParameter.
type Service struct {
	cfg    Config
	params map[string]*parameter
	// allowDiskUseByDefault is allowDiskUse of a find or aggregate that
	// does not say.
	allowDiskUseByDefault atomic.Bool
	// txnLifetimeSeconds is transactionLifetimeLimitSeconds and
	// txnLockTimeoutMillis maxTransactionLockRequestTimeoutMillis.
	txnLifetimeSeconds   atomic.Int32
	txnLockTimeoutMillis atomic.Int32
}

// New returns the parameters of cfg, allowDiskUseByDefault true as in
// MongoDB 6.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	s := &Service{cfg: cfg}
	s.allowDiskUseByDefault.Store(true)
	s.txnLifetimeSeconds.Store(60)
	s.txnLockTimeoutMillis.Store(5)
	s.params = s.build()
	return s
}

// Commands are getParameter and setParameter, for the server's registry.
func (s *Service) Commands() []command.Command {
	return []command.Command{
		{Name: "getParameter", Handle: s.getParameter, AdminOnly: true},
		{Name: "setParameter", Handle: s.setParameter, AdminOnly: true},
	}
}

// AllowDiskUseByDefault is the allowDiskUse of a find or aggregate that
// does not say: MongoDB 6's default is true, and false brings back the
// earlier behaviour of failing past the sort limit.
func (s *Service) AllowDiskUseByDefault() bool { return s.allowDiskUseByDefault.Load() }

func (s *Service) build() map[string]*parameter {
	params := map[string]*parameter{
		"featureCompatibilityVersion": {get: func() any { return bson.D{{Key: "version", Value: s.cfg.FeatureCompatibilityVersion}} }},
		"logLevel":                    {get: s.logLevel, startup: true},
		// mongodump and mongorestore check it before carrying users.
		"authSchemaVersion": {get: func() any { return s.cfg.AuthSchemaVersion }},
		// Set at startup only, as in MongoDB (Config.AuthMechanisms).
		"authenticationMechanisms": {get: func() any {
			var names bson.A
			for _, m := range s.cfg.AuthenticationMechanisms {
				names = append(names, m)
			}
			return names
		}, startup: true},
		// Set at startup only, as in MongoDB (Config.SessionTimeout).
		"localLogicalSessionTimeoutMinutes": {get: func() any { return s.cfg.SessionTimeoutMinutes }, startup: true},
		// Read by drivers' and tools' test harnesses and by monitoring,
		// reporting what Lethe does: idle cursors close after
		// cursorIdleTimeout; the localhost exception is always on; no
		// query is refused for scanning a collection; expired documents
		// are removed without a monitor to turn off; logging is not quiet.
		"cursorTimeoutMillis":       {get: func() any { return s.cfg.CursorIdleTimeout.Milliseconds() }},
		"enableLocalhostAuthBypass": {get: func() any { return true }},
		"notablescan":               {get: func() any { return false }},
		"ttlMonitorEnabled":         {get: func() any { return true }},
		"quiet":                     {get: func() any { return false }},
		"allowDiskUseByDefault": {
			get: func() any { return s.allowDiskUseByDefault.Load() },
			set: s.setAllowDiskUseByDefault,
		},
		// MongoDB's defaults and checks (transaction_participant.cpp,
		// transactions.idl): a transaction is aborted once it has been open
		// for the lifetime, at least a second; a statement of one waits for
		// a collection's lock at most the timeout, a negative one meaning
		// no bound of its own.
		"transactionLifetimeLimitSeconds": {
			get: func() any { return s.txnLifetimeSeconds.Load() },
			set: s.setTransactionLifetime, startup: true,
		},
		"maxTransactionLockRequestTimeoutMillis": {
			get: func() any { return s.txnLockTimeoutMillis.Load() },
			set: func(cmd, name string, v bson.RawValue) error {
				n, err := command.Int32(cmd, name, v)
				if err == nil {
					s.txnLockTimeoutMillis.Store(n)
				}
				return err
			}, startup: true,
		},
	}
	if s.cfg.LogLevel != nil {
		params["logLevel"].set = s.setLogLevel
	}
	return params
}

// logLevel maps zap's level to MongoDB's verbosity: 0 logs Info and above,
// anything higher adds debug lines, such as one per command.
func (s *Service) logLevel() any {
	if s.cfg.Logger.Core().Enabled(zapcore.DebugLevel) {
		return int32(1)
	}
	return int32(0)
}

func (s *Service) setLogLevel(cmd, name string, v bson.RawValue) error {
	n, err := command.Int32(cmd, name, v)
	if err != nil {
		return err
	}
	if n < 0 || n > 5 {
		return mongoerr.New(mongoerr.BadValue, "logLevel must be between 0 and 5, not %d", n)
	}
	level := zapcore.InfoLevel
	if n > 0 {
		level = zapcore.DebugLevel
	}
	s.cfg.LogLevel.SetLevel(level)
	return nil
}

// names returns the parameter names, sorted.
func (s *Service) names() []string {
	names := make([]string, 0, len(s.params))
	for name := range s.params {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// setAllowDiskUseByDefault sets what allowDiskUse a find or aggregate that
// does not say has: MongoDB 6's default is true, and false brings back the
// earlier behaviour of failing past the sort limit.
func (s *Service) setAllowDiskUseByDefault(cmd, name string, v bson.RawValue) error {
	b, ok := v.BooleanOK()
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "%s: %s must be a boolean, not %s", cmd, name, command.TypeName(v.Type))
	}
	s.allowDiskUseByDefault.Store(b)
	return nil
}

func (s *Service) setTransactionLifetime(cmd, name string, v bson.RawValue) error {
	n, err := command.Int32(cmd, name, v)
	if err != nil {
		return err
	}
	if n < 1 {
		return mongoerr.New(mongoerr.BadValue, "transactionLifetimeLimitSeconds must be greater than or equal to 1s")
	}
	s.txnLifetimeSeconds.Store(n)
	return nil
}

// TransactionLifetime is transactionLifetimeLimitSeconds: how long a
// transaction may stay open before it is aborted.
func (s *Service) TransactionLifetime() time.Duration {
	return time.Duration(s.txnLifetimeSeconds.Load()) * time.Second
}

// noLockBound stands for a negative maxTransactionLockRequestTimeoutMillis:
// a statement then waits as long as its own deadline lets it.
const noLockBound = 24 * time.Hour

// TransactionLockTimeout is maxTransactionLockRequestTimeoutMillis: how
// long a statement of a transaction waits for a collection's lock.
func (s *Service) TransactionLockTimeout() time.Duration {
	n := s.txnLockTimeoutMillis.Load()
	switch {
	case n < 0:
		return noLockBound
	case n == 0:
		return time.Nanosecond // no wait: the engine takes 0 for its default
	}
	return time.Duration(n) * time.Millisecond
}
