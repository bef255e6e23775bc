package server

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap/zapcore"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/usermgmt"
)

// parameter is a server parameter of getParameter and setParameter.
type parameter struct {
	get func() any
	// set changes the value at run time; nil if it cannot be changed.
	set func(cmd, name string, v bson.RawValue) error
	// startup says a command-line flag sets it, for getParameter's
	// showDetails (settableAtStartup).
	startup bool
}

func (s *Server) buildParameters() map[string]*parameter {
	params := map[string]*parameter{
		"featureCompatibilityVersion": {get: func() any { return bson.D{{Key: "version", Value: fcvVersion}} }},
		"logLevel":                    {get: s.logLevel, startup: true},
		// mongodump and mongorestore check it before carrying users.
		"authSchemaVersion": {get: func() any { return int32(usermgmt.SchemaVersion) }},
		// Set at startup only, as in MongoDB (Config.AuthMechanisms).
		"authenticationMechanisms": {get: func() any {
			var names bson.A
			for _, m := range s.authMechanisms() {
				names = append(names, string(m))
			}
			return names
		}, startup: true},
		// Set at startup only, as in MongoDB (Config.SessionTimeout).
		"localLogicalSessionTimeoutMinutes": {get: func() any { return s.sessions.TimeoutMinutes() }, startup: true},
		// Read by drivers' and tools' test harnesses and by monitoring,
		// reporting what Lethe does: idle cursors close after
		// cursorIdleTimeout; the localhost exception is always on; no
		// query is refused for scanning a collection; expired documents
		// are removed without a monitor to turn off; logging is not quiet.
		"cursorTimeoutMillis":       {get: func() any { return cursorIdleTimeout.Milliseconds() }},
		"enableLocalhostAuthBypass": {get: func() any { return true }},
		"notablescan":               {get: func() any { return false }},
		"ttlMonitorEnabled":         {get: func() any { return true }},
		"quiet":                     {get: func() any { return false }},
		"allowDiskUseByDefault": {
			get: func() any { return s.allowDiskUseByDefault.Load() },
			set: s.setAllowDiskUseByDefault,
		},
	}
	if s.cfg.LogLevel != nil {
		params["logLevel"].set = s.setLogLevel
	}
	return params
}

// logLevel maps zap's level to MongoDB's verbosity: 0 logs Info and above,
// anything higher adds debug lines, such as one per command.
func (s *Server) logLevel() any {
	if s.log.Core().Enabled(zapcore.DebugLevel) {
		return int32(1)
	}
	return int32(0)
}

func (s *Server) setLogLevel(cmd, name string, v bson.RawValue) error {
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

// paramNames returns the parameter names, sorted.
func (s *Server) paramNames() []string {
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
func (s *Server) setAllowDiskUseByDefault(cmd, name string, v bson.RawValue) error {
	b, ok := v.BooleanOK()
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "%s: %s must be a boolean, not %s", cmd, name, command.TypeName(v.Type))
	}
	s.allowDiskUseByDefault.Store(b)
	return nil
}
