// Package session keeps the logical sessions of a server's clients: which
// sessions exist, when each was last used, and when one ends or times out.
//
// A session is its owner's: as in MongoDB, its identity is the pair of the
// UUID a client names and the digest of the user the server knows the
// client as (Key), so that two users naming the same UUID have two
// sessions, and neither can use, end or kill the other's.
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
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/mongoerr"
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

// UID is a session's user digest: the SHA-256 of its owner's name,
// "user@db".
type UID [32]byte

// NoUser is the UID of the sessions of clients that are not authenticated:
// the SHA-256 of the empty string, which no user's digest can be, since
// every user's name holds an "@".
var NoUser = UID(sha256.Sum256(nil))

// UserUID returns the digest of user of db, NoUser for the empty user.
func UserUID(user, db string) UID {
	if user == "" && db == "" {
		return NoUser
	}
	return sha256.Sum256([]byte(user + "@" + db))
}

// String formats the digest as base64, as MongoDB's messages do.
func (u UID) String() string { return base64.StdEncoding.EncodeToString(u[:]) }

// Key identifies a session: its id and its owner's digest.
type Key struct {
	ID  ID
	UID UID
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
	Max int
	// Clock is the time source; a clock that also has Changed (a manual
	// clock) wakes the sweep when it moves.
	Clock clock.Clock
	// Gone, if set, is told of sessions that ended or timed out, outside
	// the registry's locks, so that what they own can be closed.
	Gone func([]Key)
}

// Registry is the set of live sessions. Use is lock-free for a known
// session: every command of a driver carries an lsid.
type Registry struct {
	opts    Options
	timeout int64 // nanoseconds

	entries sync.Map     // Key → *entry
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
	user string // the owner's name as it started the session, if known
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
		opts.Clock = clock.System{}
	}
	return &Registry{opts: opts, timeout: int64(opts.Timeout)}
}

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

// Live reports whether k is a live session: started again, for example,
// after Gone was told it ended.
func (r *Registry) Live(k Key) bool {
	v, ok := r.entries.Load(k)
	return ok && v.(*entry).last.Load() != dead
}

// Start begins a new session of the user whose digest is uid, as
// startSession does; user is the name $listLocalSessions shows.
func (r *Registry) Start(uid UID, user string) (Key, error) {
	id, err := NewID()
	if err != nil {
		return Key{}, err
	}
	k := Key{ID: id, UID: uid}
	return k, r.Use(k, user)
}

// Use marks session k used now, starting it if it is not live: every
// command with an lsid does this, and so does refreshSessions. A session
// found expired is ended first, so that its cursors do not outlive it.
// user, if not empty, is the owner's name ("user@db"), kept for
// $listLocalSessions when this use starts the session.
func (r *Registry) Use(k Key, user string) error {
	now := r.opts.Clock.Now().UnixNano()
	for {
		v, ok := r.entries.Load(k)
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
			r.kill(k, e, last)
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
				"Unable to add session ID %s into the cache because the number of active sessions is too high", k.ID)
		}
	}
	e := &entry{user: user}
	e.last.Store(now)
	if _, loaded := r.entries.LoadOrStore(k, e); loaded {
		return r.Use(k, user) // another command started it meanwhile
	}
	r.n.Add(1)
	return nil
}

// kill removes k if its entry still reads last, and reports it gone.
func (r *Registry) kill(k Key, e *entry, last int64) {
	r.sweep.Lock()
	won := e.last.CompareAndSwap(last, dead)
	if won {
		r.entries.Delete(k)
		r.n.Add(-1)
	}
	r.sweep.Unlock()
	if won {
		r.gone([]Key{k})
	}
}

func (r *Registry) gone(keys []Key) {
	if len(keys) > 0 && r.opts.Gone != nil {
		r.opts.Gone(keys)
	}
}

// End ends the sessions, as endSessions does; keys of no live session are
// ignored. Their cursors are closed through Gone.
func (r *Registry) End(keys []Key) {
	r.sweep.Lock()
	for _, k := range keys {
		v, ok := r.entries.Load(k)
		if !ok {
			continue
		}
		e := v.(*entry)
		if last := e.last.Load(); last != dead && e.last.CompareAndSwap(last, dead) {
			r.entries.Delete(k)
			r.n.Add(-1)
		}
	}
	r.sweep.Unlock()
	// Every key is reported, live or not: cursors opened in a session that
	// has since timed out and been started again belong to it all the same.
	r.gone(keys)
}

// Sweep ends the sessions unused for the timeout and returns when the next
// one falls due, zero if none is kept.
func (r *Registry) Sweep() time.Duration {
	now := r.opts.Clock.Now().UnixNano()
	var expired []Key
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
				expired = append(expired, k.(Key))
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
	Key
	LastUse time.Time
	// User is the owner's name, "user@db", when the session was started by
	// its owner under that name; empty otherwise.
	User string
}

// List returns the live sessions in key order, sweeping expired ones first.
func (r *Registry) List() []Session {
	r.Sweep()
	var out []Session
	r.entries.Range(func(k, v any) bool {
		e := v.(*entry)
		if last := e.last.Load(); last != dead {
			out = append(out, Session{Key: k.(Key), LastUse: time.Unix(0, last), User: e.user})
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		if c := bytes.Compare(out[i].ID[:], out[j].ID[:]); c != 0 {
			return c < 0
		}
		return bytes.Compare(out[i].UID[:], out[j].UID[:]) < 0
	})
	return out
}
