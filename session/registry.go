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
//
// Sessions are bounded twice: Options.Max in all, as MongoDB's maxSessions,
// and Options.MaxPerClient for each client (a user, or an address without
// access control), so that one client minting session ids is refused
// itself (TooManyLogicalSessions) and leaves room for everyone else. An
// entry costs a few dozen bytes (see TestSessionMemory): a million fit.
package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash/maphash"
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
	// DefaultMax is MongoDB's maxSessions: the sessions kept at once.
	DefaultMax = 1_000_000
	// DefaultMaxPerClient bounds the sessions one client keeps, a tenth
	// of DefaultMax: a client minting session ids fills its own share
	// and leaves the rest to everyone else. Options.MaxPerClient defaults
	// to a tenth of Options.Max likewise.
	DefaultMaxPerClient = DefaultMax / 10
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
	// MaxPerClient bounds the sessions one client (see Use) keeps; past it
	// its new ones are refused with TooManyLogicalSessions, while other
	// clients' are not. Zero means a tenth of Max (DefaultMaxPerClient for
	// DefaultMax), at least one.
	MaxPerClient int
	// Clock is the time source; a clock that also has Changed (a manual
	// clock) wakes the sweep when it moves.
	Clock clock.Clock
	// Gone, if set, is told of sessions that ended or timed out, outside
	// the registry's locks, so that what they own can be closed.
	Gone func([]Key)
}

// numShards spreads the sessions over maps with locks of their own, so
// that the commands of different sessions seldom wait for one another.
const numShards = 64

// entryKey is how a shard knows a session: its id and the index of its
// owner's digest in the owners table.
type entryKey struct {
	id  ID
	uid uint32
}

// entry is a session's last use and the index of the client that started
// it, whose count it is in.
type entry struct {
	client uint32
	last   nanos
}

// nanos is a time in Unix nanoseconds, kept as two words so that an entry
// is aligned to 4 bytes and a map slot takes 32 rather than 40.
type nanos [2]uint32

func toNanos(t int64) nanos { return nanos{uint32(uint64(t) >> 32), uint32(t)} }

func (n nanos) get() int64 { return int64(uint64(n[0])<<32 | uint64(n[1])) }

type shard struct {
	mu sync.Mutex
	m  map[entryKey]entry
	_  [48]byte // a cache line of its own
}

// Registry is the set of live sessions.
//
// Locks: mu, then a shard's. A use of a known session takes mu to read and
// its shard's lock; starting and ending sessions take mu to write, which
// also guards owners, and need no shard lock.
type Registry struct {
	opts    Options
	timeout int64 // nanoseconds
	seed    maphash.Seed

	mu     sync.RWMutex
	owners owners
	shards [numShards]shard
	// swept is when a full registry last swept to make room, so that
	// clients minting ids cannot make every command scan it.
	swept atomic.Int64
}

// New returns an empty registry.
func New(opts Options) *Registry {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Max <= 0 {
		opts.Max = DefaultMax
	}
	if opts.MaxPerClient <= 0 {
		opts.MaxPerClient = max(opts.Max/10, 1)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	r := &Registry{opts: opts, timeout: int64(opts.Timeout), seed: maphash.MakeSeed(), owners: newOwners()}
	for i := range r.shards {
		r.shards[i].m = make(map[entryKey]entry)
	}
	return r
}

// shard returns the shard of session id. The hash is seeded, so that
// clients choosing ids cannot crowd one shard.
func (r *Registry) shard(id ID) *shard {
	return &r.shards[maphash.Comparable(r.seed, id)%numShards]
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
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.owners.n
}

// LenOf is the number of sessions client started that are kept.
func (r *Registry) LenOf(client string) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.owners.count(client)
}

// Live reports whether k is a live session: started again, for example,
// after Gone was told it ended.
func (r *Registry) Live(k Key) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	uid, ok := r.owners.uid(k.UID)
	if !ok {
		return false
	}
	sh := r.shard(k.ID)
	sh.mu.Lock()
	_, ok = sh.m[entryKey{k.ID, uid}]
	sh.mu.Unlock()
	return ok
}

// Start begins a new session of the user whose digest is uid, as
// startSession does; user and client are as Use takes them.
func (r *Registry) Start(uid UID, user, client string) (Key, error) {
	id, err := NewID()
	if err != nil {
		return Key{}, err
	}
	k := Key{ID: id, UID: uid}
	return k, r.Use(k, user, client)
}

// Use marks session k used now, starting it if it is not live: every
// command with an lsid does this, and so does refreshSessions. A session
// found expired is ended first, so that its cursors do not outlive it.
// user, if not empty, is the owner's name ("user@db"), kept for
// $listLocalSessions. client names who is asking (the server passes the
// authenticated user, or the client's address without access control): a
// session it starts counts against its Options.MaxPerClient.
func (r *Registry) Use(k Key, user, client string) error {
	now := r.opts.Clock.Now().UnixNano()
	if r.touch(k, now) {
		return nil
	}
	return r.start(k, user, client, now)
}

// touch marks k used at now if it is live, and reports whether it was.
func (r *Registry) touch(k Key, now int64) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	uid, ok := r.owners.uid(k.UID)
	if !ok {
		return false
	}
	sh := r.shard(k.ID)
	ek := entryKey{k.ID, uid}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[ek]
	if !ok || now-e.last.get() > r.timeout {
		return false
	}
	if now > e.last.get() {
		e.last = toNanos(now)
		sh.m[ek] = e
	}
	return true
}

// start starts session k for client, ending it first if it has expired,
// unless a bound refuses it.
func (r *Registry) start(k Key, user, client string, now int64) error {
	for swept := false; ; swept = true {
		gone, full, err := r.tryStart(k, user, client, now)
		r.gone(gone)
		if !full || swept {
			return err
		}
		// Expired sessions may make room; a full registry sweeps at most
		// once a second, lest clients minting ids make every command scan.
		last := r.swept.Load()
		if now-last < int64(minSweepInterval) || !r.swept.CompareAndSwap(last, now) {
			return err
		}
		r.Sweep()
	}
}

// tryStart is one attempt of start. full reports a refusal that a sweep
// might lift; gone lists the expired session it ended.
func (r *Registry) tryStart(k Key, user, client string, now int64) (gone []Key, full bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sh := r.shard(k.ID)
	if uid, ok := r.owners.uid(k.UID); ok {
		ek := entryKey{k.ID, uid}
		if e, ok := sh.m[ek]; ok {
			if now-e.last.get() <= r.timeout { // another command started it meanwhile
				e.last = toNanos(max(e.last.get(), now))
				sh.m[ek] = e
				return nil, false, nil
			}
			delete(sh.m, ek)
			r.owners.remove(uid, e.client)
			gone = []Key{k}
		}
	}
	switch {
	case r.owners.n >= r.opts.Max:
		return gone, true, mongoerr.New(mongoerr.TooManyLogicalSessions,
			"Unable to add session ID %s into the cache because the number of active sessions is too high", k.ID)
	case r.owners.count(client) >= r.opts.MaxPerClient:
		return gone, true, mongoerr.New(mongoerr.TooManyLogicalSessions,
			"Unable to add session ID %s into the cache because %s has too many active sessions (%d, the most one client may keep); end sessions with endSessions to free them",
			k.ID, client, r.owners.count(client))
	}
	uid, c := r.owners.add(k.UID, user, client)
	sh.m[entryKey{k.ID, uid}] = entry{client: c, last: toNanos(now)}
	return gone, false, nil
}

func (r *Registry) gone(keys []Key) {
	if len(keys) > 0 && r.opts.Gone != nil {
		r.opts.Gone(keys)
	}
}

// End ends the sessions, as endSessions does; keys of no live session are
// ignored. Their cursors are closed through Gone.
func (r *Registry) End(keys []Key) {
	r.mu.Lock()
	for _, k := range keys {
		uid, ok := r.owners.uid(k.UID)
		if !ok {
			continue
		}
		sh := r.shard(k.ID)
		ek := entryKey{k.ID, uid}
		if e, ok := sh.m[ek]; ok {
			delete(sh.m, ek)
			r.owners.remove(uid, e.client)
		}
	}
	r.mu.Unlock()
	// Every key is reported, live or not: cursors opened in a session that
	// has since timed out and been started again belong to it all the same.
	r.gone(keys)
}

// Sweep ends the sessions unused for the timeout and returns when the next
// one falls due, zero if none is kept. It takes the lock one shard at a
// time, so that commands wait for a shard's scan at most.
func (r *Registry) Sweep() time.Duration {
	now := r.opts.Clock.Now().UnixNano()
	var expired []Key
	next := int64(math.MaxInt64)
	for i := range r.shards {
		sh := &r.shards[i]
		r.mu.Lock()
		for ek, e := range sh.m {
			if last := e.last.get(); now-last <= r.timeout {
				next = min(next, last+r.timeout-now+1)
				continue
			}
			expired = append(expired, Key{ID: ek.id, UID: r.owners.uids[ek.uid].uid})
			delete(sh.m, ek)
			r.owners.remove(ek.uid, e.client)
		}
		r.mu.Unlock()
	}
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
	// User is the owner's name, "user@db", when a session of that owner
	// was started by the owner itself; empty otherwise.
	User string
}

// List returns the live sessions in key order, sweeping expired ones first.
func (r *Registry) List() []Session {
	r.Sweep()
	var out []Session
	r.mu.RLock()
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for ek, e := range sh.m {
			u := &r.owners.uids[ek.uid]
			out = append(out, Session{Key: Key{ID: ek.id, UID: u.uid}, LastUse: time.Unix(0, e.last.get()), User: u.name})
		}
		sh.mu.Unlock()
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if c := bytes.Compare(out[i].ID[:], out[j].ID[:]); c != 0 {
			return c < 0
		}
		return bytes.Compare(out[i].UID[:], out[j].UID[:]) < 0
	})
	return out
}
