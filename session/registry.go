// Package session keeps the logical sessions of a server's clients: which
// sessions exist, when each was last used, and when one ends or times out.
//
// It is a package of its own, below the server, because sessions are where
// retryable writes and transactions will keep their state: the server
// consults the Registry on every command that carries an lsid, and learns
// through Options.Gone which sessions ended so that it can close what they
// own (their cursors). Killing a session's operations and cursors
// (killSessions) leaves the session itself in place, as in MongoDB, and is
// the server's business: the registry knows nothing of cursors.
//
// A session unused for the timeout is gone: the next command that names it
// finds it expired, ends it (its cursors die) and starts it afresh, and a
// background sweep (Run) ends the ones no one names again.
package session

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// ID is a session's id, the UUID of an lsid's id field.
type ID [16]byte

// String formats the id as a UUID.
func (id ID) String() string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// NewID returns a random (version 4) UUID.
func NewID() (ID, error) {
	var id ID
	if _, err := rand.Read(id[:]); err != nil {
		return ID{}, fmt.Errorf("session: new id: %w", err)
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id, nil
}

// Defaults of Options.
const (
	// DefaultTimeout is MongoDB's localLogicalSessionTimeoutMinutes.
	DefaultTimeout = 30 * time.Minute
	// DefaultMax bounds the sessions kept at once. MongoDB's maxSessions is
	// a million; Lethe keeps a tenth, about 15 MiB of entries, so that a
	// client minting session ids cannot take the server's memory.
	DefaultMax = 100_000
)

// minSweepInterval keeps the background sweep from spinning when many
// sessions fall due one after another.
const minSweepInterval = time.Second

// Clock is the time source; ttlindex's clocks satisfy it. A clock that also
// has Changed (a manual clock) wakes the sweep when it moves.
type Clock interface {
	Now() time.Time
}

type changer interface {
	Changed() <-chan struct{}
}

// Options configure a Registry.
type Options struct {
	// Timeout is how long a session lives after its last use; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// Max bounds the sessions kept; past it new ones are refused with
	// TooManyLogicalSessions (261). Zero means DefaultMax.
	Max   int
	Clock Clock
	// Gone, if set, is told of sessions that ended or timed out, outside
	// the registry's locks, so that what they own can be closed.
	Gone func([]ID)
}

// Registry is the set of live sessions. Use is lock-free for a known
// session: every command of a driver carries an lsid.
type Registry struct {
	opts    Options
	timeout int64 // nanoseconds

	entries sync.Map     // ID → *entry
	n       atomic.Int64 // entries
	sweep   sync.Mutex   // one sweeper at a time
	// swept is when a full registry last swept to make room, so that
	// clients minting ids cannot make every command scan it.
	swept atomic.Int64
}

// entry is a session's last use in Unix nanoseconds, or dead once it has
// been ended: a Use that finds it dead starts the session afresh.
type entry struct {
	last atomic.Int64
}

const dead = math.MinInt64

// New returns an empty registry.
func New(opts Options) *Registry {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	return &Registry{opts: opts, timeout: int64(opts.Timeout)}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Timeout is how long a session lives after its last use.
func (r *Registry) Timeout() time.Duration { return r.opts.Timeout }

// TimeoutMinutes is the timeout as hello's logicalSessionTimeoutMinutes and
// startSession's timeoutMinutes report it: whole minutes, at least one.
func (r *Registry) TimeoutMinutes() int32 {
	m := (r.opts.Timeout + time.Minute - 1) / time.Minute
	return int32(min(max(m, 1), math.MaxInt32))
}

// Len is the number of sessions kept, expired ones not yet swept included.
func (r *Registry) Len() int { return int(r.n.Load()) }

// Live reports whether id is a live session: started again, for example,
// after Gone was told it ended.
func (r *Registry) Live(id ID) bool {
	v, ok := r.entries.Load(id)
	return ok && v.(*entry).last.Load() != dead
}

// Start begins a new session, as startSession does.
func (r *Registry) Start() (ID, error) {
	id, err := NewID()
	if err != nil {
		return ID{}, err
	}
	return id, r.Use(id)
}

// Use marks session id used now, starting it if it is not live: every
// command with an lsid does this, and so does refreshSessions. A session
// found expired is ended first, so that its cursors do not outlive it.
func (r *Registry) Use(id ID) error {
	now := r.opts.Clock.Now().UnixNano()
	for {
		v, ok := r.entries.Load(id)
		if !ok {
			break
		}
		e := v.(*entry)
		last := e.last.Load()
		switch {
		case last == dead:
			// Being removed by End or the sweep: wait for it to go.
			r.sweep.Lock()
			r.sweep.Unlock()
			continue
		case now-last > r.timeout:
			r.kill(id, e, last)
			continue
		case now <= last || e.last.CompareAndSwap(last, now):
			return nil
		}
	}
	if r.n.Load() >= int64(r.opts.Max) {
		if last := r.swept.Load(); now-last >= int64(minSweepInterval) && r.swept.CompareAndSwap(last, now) {
			r.Sweep()
		}
		if r.n.Load() >= int64(r.opts.Max) {
			return mongoerr.New(mongoerr.TooManyLogicalSessions,
				"Unable to add session ID %s into the cache because the number of active sessions is too high", id)
		}
	}
	e := new(entry)
	e.last.Store(now)
	if _, loaded := r.entries.LoadOrStore(id, e); loaded {
		return r.Use(id) // another command started it meanwhile
	}
	r.n.Add(1)
	return nil
}

// kill removes id if its entry still reads last, and reports it gone.
func (r *Registry) kill(id ID, e *entry, last int64) {
	r.sweep.Lock()
	won := e.last.CompareAndSwap(last, dead)
	if won {
		r.entries.Delete(id)
		r.n.Add(-1)
	}
	r.sweep.Unlock()
	if won {
		r.gone([]ID{id})
	}
}

func (r *Registry) gone(ids []ID) {
	if len(ids) > 0 && r.opts.Gone != nil {
		r.opts.Gone(ids)
	}
}

// End ends the sessions, as endSessions does; ids of no live session are
// ignored. Their cursors are closed through Gone.
func (r *Registry) End(ids []ID) {
	r.sweep.Lock()
	for _, id := range ids {
		v, ok := r.entries.Load(id)
		if !ok {
			continue
		}
		e := v.(*entry)
		if last := e.last.Load(); last != dead && e.last.CompareAndSwap(last, dead) {
			r.entries.Delete(id)
			r.n.Add(-1)
		}
	}
	r.sweep.Unlock()
	// Every id is reported, live or not: cursors opened in a session that
	// has since timed out and been started again belong to it all the same.
	r.gone(ids)
}

// Sweep ends the sessions unused for the timeout and returns when the next
// one falls due, zero if none is kept.
func (r *Registry) Sweep() time.Duration {
	now := r.opts.Clock.Now().UnixNano()
	var expired []ID
	next := int64(math.MaxInt64)
	r.sweep.Lock()
	r.entries.Range(func(k, v any) bool {
		e := v.(*entry)
		last := e.last.Load()
		switch {
		case last == dead:
		case now-last > r.timeout:
			if e.last.CompareAndSwap(last, dead) {
				r.entries.Delete(k)
				r.n.Add(-1)
				expired = append(expired, k.(ID))
			}
		default:
			next = min(next, last+r.timeout-now+1)
		}
		return true
	})
	r.sweep.Unlock()
	r.gone(expired)
	if next == math.MaxInt64 {
		return 0
	}
	return time.Duration(next)
}

// Run sweeps expired sessions in the background until ctx ends: when the
// next session falls due, and whenever a manual clock moves.
func (r *Registry) Run(ctx context.Context) {
	changer, _ := r.opts.Clock.(changer)
	for {
		var moved <-chan struct{}
		if changer != nil {
			moved = changer.Changed()
		}
		wait := r.Sweep()
		if wait == 0 || wait > r.opts.Timeout {
			wait = r.opts.Timeout
		}
		wait = max(wait, minSweepInterval)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-moved:
		case <-t.C:
		}
		t.Stop()
	}
}

// Session is a live session as $listLocalSessions shows it.
type Session struct {
	ID      ID
	LastUse time.Time
}

// List returns the live sessions in id order, sweeping expired ones first.
func (r *Registry) List() []Session {
	r.Sweep()
	var out []Session
	r.entries.Range(func(k, v any) bool {
		if last := v.(*entry).last.Load(); last != dead {
			out = append(out, Session{ID: k.(ID), LastUse: time.Unix(0, last)})
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return string(out[i].ID[:]) < string(out[j].ID[:]) })
	return out
}
