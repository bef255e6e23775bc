package diag

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap/zapcore"
)

// RecentLogEntries is how many log lines getLog "global" can return, as in
// MongoDB's in-memory log buffer.
const RecentLogEntries = 1024

// LogRing keeps the most recent log entries, encoded as JSON lines in
// MongoDB's log format, for getLog. Warnings logged before the server starts listening are also kept
// apart as the startup warnings that shells print on connect.
type LogRing struct {
	mu      sync.Mutex
	lines   []string // circular; next is the oldest once full
	next    int
	total   int64
	startup []string
	booting bool
}

// NewLogRing returns a ring that keeps the last size lines.
func NewLogRing(size int) *LogRing {
	return &LogRing{lines: make([]string, 0, size), booting: true}
}

// Core returns a zap core that records Info and above into the ring.
func (r *LogRing) Core() zapcore.Core {
	return &ringCore{LevelEnabler: zapcore.InfoLevel, ring: r}
}

func (r *LogRing) add(line string, lvl zapcore.Level) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) < cap(r.lines) {
		r.lines = append(r.lines, line)
	} else {
		r.lines[r.next] = line
		r.next = (r.next + 1) % len(r.lines)
	}
	r.total++
	if r.booting && lvl >= zapcore.WarnLevel {
		r.startup = append(r.startup, line)
	}
}

// EndStartup closes the startup phase: later warnings are ordinary lines.
func (r *LogRing) EndStartup() {
	r.mu.Lock()
	r.booting = false
	r.mu.Unlock()
}

// Recent returns the kept lines, oldest first, and how many were ever written.
func (r *LogRing) Recent() ([]string, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	out = append(out, r.lines[:r.next]...)
	return out, r.total
}

// StartupWarnings are the warnings logged before EndStartup, which getLog
// "startupWarnings" returns and shells print on connect.
func (r *LogRing) StartupWarnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.startup...)
}

type ringCore struct {
	zapcore.LevelEnabler
	fields []zapcore.Field // from With
	ring   *LogRing
}

func (c *ringCore) With(fields []zapcore.Field) zapcore.Core {
	return &ringCore{LevelEnabler: c.LevelEnabler, fields: append(slices.Clip(c.fields), fields...), ring: c.ring}
}

func (c *ringCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// logLine is MongoDB's structured log format, which shells parse: mongosh
// prints the startup warnings as "<t.$date>: <msg>".
type logLine struct {
	T struct {
		Date string `json:"$date"`
	} `json:"t"`
	S    string         `json:"s"`
	C    string         `json:"c"`
	ID   int            `json:"id"`
	Ctx  string         `json:"ctx"`
	Msg  string         `json:"msg"`
	Attr map[string]any `json:"attr,omitempty"`
}

func (c *ringCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	attr := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(attr)
	}
	for _, f := range fields {
		f.AddTo(attr)
	}
	line := logLine{S: severity(e.Level), C: "-", Ctx: "lethe", Msg: e.Message, Attr: attr.Fields}
	if e.LoggerName != "" {
		line.C = e.LoggerName
	}
	line.T.Date = e.Time.Format("2006-01-02T15:04:05.000Z07:00")
	b, err := json.Marshal(line)
	if err != nil {
		// An attribute JSON cannot hold; the message alone is still worth keeping.
		line.Attr = nil
		if b, err = json.Marshal(line); err != nil {
			return fmt.Errorf("server: encode log line: %w", err)
		}
	}
	c.ring.add(string(b), e.Level)
	return nil
}

func (c *ringCore) Sync() error { return nil }

// severity is MongoDB's one-letter log severity.
func severity(l zapcore.Level) string {
	switch {
	case l >= zapcore.DPanicLevel:
		return "F"
	case l >= zapcore.ErrorLevel:
		return "E"
	case l >= zapcore.WarnLevel:
		return "W"
	}
	return "I"
}
