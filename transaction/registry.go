package transaction

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine"
)

// DefaultLifetime is MongoDB's default transactionLifetimeLimitSeconds.
const DefaultLifetime = 60 * time.Second

// Config is what the registry needs of the server.
type Config struct {
	Engine *engine.Engine
	Clock  clock.Clock // nil means the system clock
	Logger *zap.Logger
	// Lifetime is transactionLifetimeLimitSeconds, read when a
	// transaction starts; nil means DefaultLifetime.
	Lifetime func() time.Duration
	// LockTimeout is maxTransactionLockRequestTimeoutMillis, read when a
	// transaction starts; nil means the engine's default.
	LockTimeout func() time.Duration
	// Ended, when set, is told of each transaction that ends (its
	// session's packed key and its number), so that the server closes the
	// cursors opened in it. It is called under the session's checkout.
	Ended func(key string, number int64)
}

// Registry holds the transaction state of the sessions that have used a
// transaction number.
type Registry struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*Session

	started, committed, aborted atomic.Int64
}

// New returns an empty registry.
func New(cfg Config) *Registry {
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Lifetime == nil {
		cfg.Lifetime = func() time.Duration { return DefaultLifetime }
	}
	if cfg.LockTimeout == nil {
		cfg.LockTimeout = func() time.Duration { return 0 }
	}
	return &Registry{cfg: cfg, sessions: make(map[string]*Session)}
}

// CheckOut takes the session key (a packed session key, never ""),
// waiting while another command has it, until ctx ends. The caller checks
// it in when its command is done.
func (r *Registry) CheckOut(ctx context.Context, key string) (*Session, error) {
	for {
		s := r.session(key)
		select {
		case s.slot <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if s.forgotten {
			// Forgotten while we waited: its successor is the session now.
			<-s.slot
			continue
		}
		s.setActive(true, r.cfg.Clock.Now())
		return s, nil
	}
}

// tryCheckOut takes the session key if it is known and free.
func (r *Registry) tryCheckOut(key string) (*Session, bool) {
	r.mu.Lock()
	s := r.sessions[key]
	r.mu.Unlock()
	if s == nil {
		return nil, false
	}
	select {
	case s.slot <- struct{}{}:
	default:
		return s, false
	}
	if s.forgotten {
		<-s.slot
		return nil, false
	}
	s.setActive(true, r.cfg.Clock.Now())
	return s, true
}

// session returns key's session, made if need be.
func (r *Registry) session(key string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sessions[key]
	if s == nil {
		s = &Session{r: r, key: key, slot: make(chan struct{}, 1), number: -1}
		r.sessions[key] = s
	}
	return s
}

// Kill aborts the open transactions of the sessions match accepts (by
// their packed keys), as killSessions does; a busy session's is aborted
// when its command ends.
func (r *Registry) Kill(match func(key string) bool) {
	for _, key := range r.keys(match) {
		r.abortOrMark(key, false, "killed")
	}
}

// Forget aborts the open transactions of sessions that ended or expired
// and drops what is kept of them.
func (r *Registry) Forget(keys []string) {
	for _, key := range keys {
		r.abortOrMark(key, true, "its session ended")
	}
}

// abortOrMark aborts key's open transaction now if the session is free,
// or marks it to be aborted at its check-in; forget also drops the
// session.
func (r *Registry) abortOrMark(key string, forget bool, why string) {
	s, ok := r.tryCheckOut(key)
	if s == nil {
		return
	}
	if !ok {
		s.mu.Lock()
		s.doomed, s.doomedNumber = true, s.number
		s.forgetAtCheckIn = s.forgetAtCheckIn || forget
		s.mu.Unlock()
		return
	}
	s.abortOpen(why)
	if forget {
		s.forget()
	}
	s.CheckIn()
}

// keys lists the known sessions match accepts.
func (r *Registry) keys(match func(key string) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k := range r.sessions {
		if match(k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// Run aborts transactions past their lifetime until ctx ends, then
// aborts every open one, so that none is left when the store closes.
func (r *Registry) Run(ctx context.Context) {
	// mongod's abortExpiredTransactions job runs at most every second.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.Kill(func(string) bool { return true })
			return
		case <-tick.C:
			r.AbortExpired()
		}
	}
}

// AbortExpired aborts the transactions whose lifetime has passed.
func (r *Registry) AbortExpired() {
	now := r.cfg.Clock.Now()
	expired := r.keys(func(key string) bool {
		s := r.sessions[key] // keys holds r.mu
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.state == InProgress && !now.Before(s.expires)
	})
	for _, key := range expired {
		r.abortOrMark(key, false, "it passed transactionLifetimeLimitSeconds")
	}
}

// Stats are serverStatus's transactions counters, under mongod's names.
type Stats struct {
	CurrentActive, CurrentInactive, CurrentOpen int64
	TotalAborted, TotalCommitted, TotalStarted  int64
}

// Stats counts the open transactions and those started, committed and
// aborted since the server started.
func (r *Registry) Stats() Stats {
	st := Stats{TotalAborted: r.aborted.Load(), TotalCommitted: r.committed.Load(), TotalStarted: r.started.Load()}
	for _, in := range r.Open() {
		st.CurrentOpen++
		if in.Active {
			st.CurrentActive++
		} else {
			st.CurrentInactive++
		}
	}
	return st
}

// Info describes an open transaction, for currentOp.
type Info struct {
	Key     string // the session, packed
	Number  int64
	Active  bool // a command of it is running
	Started time.Time
	Expires time.Time
	// Open is how long it has been open, of which Active for statements.
	Open, ActiveFor time.Duration
}

// Open describes the open transactions.
func (r *Registry) Open() []Info {
	now := r.cfg.Clock.Now()
	r.mu.Lock()
	sessions := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	var out []Info
	for _, s := range sessions {
		s.mu.Lock()
		if s.state == InProgress {
			in := Info{Key: s.key, Number: s.number, Active: s.active, Started: s.started, Expires: s.expires,
				Open: now.Sub(s.started), ActiveFor: s.activeFor}
			if s.active {
				in.ActiveFor += now.Sub(s.since)
			}
			out = append(out, in)
		}
		s.mu.Unlock()
	}
	return out
}
