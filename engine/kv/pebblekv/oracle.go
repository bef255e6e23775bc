package pebblekv

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe/engine/kv"
)

// conflictBuckets is the size of the oracle's table of recent commits. Keys
// hash to buckets; two keys in one bucket can only make a conflict that
// was not one (the transaction retries), never hide one.
const conflictBuckets = 1 << 16

// oracle hands out commit timestamps and remembers, per bucket of keys, the
// newest commit that wrote one: what an optimistic transaction checks at
// commit for the keys it writes. Timestamps are hybrid: milliseconds of
// the wall clock shifted left by logicalBits, plus a counter, so that they
// grow across restarts as long as the clock does.
type oracle struct {
	seed maphash.Seed

	mu      sync.Mutex
	last    kv.Timestamp   // the newest timestamp handed out
	pending []kv.Timestamp // handed out to commits not yet applied, ascending
	latest  [conflictBuckets]kv.Timestamp

	// visible is the newest timestamp at or before which every commit is
	// applied: a snapshot taken now holds all of them.
	visible atomic.Uint64
	// appliedWake, when a snapshot transaction waits for the visible point
	// (waitVisible), is closed by the next commit applied.
	appliedWake chan struct{}

	// Exact history for snapshot transactions (see register): while any is
	// open, every commit records its keys in recent, with its timestamp.
	// starts counts the open ones by start timestamp. floor is the newest
	// timestamp whose keys may be missing from recent (the history was cut
	// short at maxRecent): a transaction that started before it finds every
	// key conflicting.
	starts map[kv.Timestamp]int
	recent map[string]kv.Timestamp
	floor  kv.Timestamp
	// prunedAt is the size of recent after its last pruning.
	prunedAt int
}

// maxRecent bounds the exact history. Past it, the history is dropped and
// the transactions open then conflict on every key they lock, which they
// retry: memory stays bounded under any load.
const maxRecent = 1 << 20

const logicalBits = 18

func newOracle() *oracle {
	o := &oracle{seed: maphash.MakeSeed(), starts: make(map[kv.Timestamp]int)}
	o.last = kv.Timestamp(time.Now().UnixMilli()) << logicalBits
	o.visible.Store(uint64(o.last))
	return o
}

func (o *oracle) bucket(key []byte) uint32 {
	return uint32(maphash.Bytes(o.seed, key) % conflictBuckets)
}

// next is a timestamp newer than every one handed out, from the clock if it
// has moved on.
func (o *oracle) nextLocked() kv.Timestamp {
	ts := o.last + 1
	if wall := kv.Timestamp(time.Now().UnixMilli()) << logicalBits; wall > ts {
		ts = wall
	}
	o.last = ts
	return ts
}

// Now is a timestamp at least as new as every commit handed one.
func (o *oracle) now() kv.Timestamp {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nextLocked()
}

// conflict reports the first of keys (by bucket) that a commit after start
// wrote, or -1.
func (o *oracle) conflictLocked(buckets []uint32, start kv.Timestamp) int {
	for i, b := range buckets {
		if o.latest[b] > start {
			return i
		}
	}
	return -1
}

// reserve hands a commit its timestamp after checking, for an optimistic
// transaction (check true), that no key it writes was committed after
// start; it returns the index of a conflicting key, or -1. keys walks the
// keys the commit writes, for the exact history. The commit must call
// applied with the timestamp once its batch is applied or has failed.
func (o *oracle) reserve(buckets []uint32, check bool, start kv.Timestamp, keys func(func([]byte))) (kv.Timestamp, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if check {
		if i := o.conflictLocked(buckets, start); i >= 0 {
			return 0, i
		}
	}
	ts := o.nextLocked()
	for _, b := range buckets {
		o.latest[b] = ts
	}
	if len(o.starts) > 0 {
		keys(func(k []byte) { o.recordLocked(k, ts) })
	}
	o.pending = append(o.pending, ts)
	return ts, -1
}

func (o *oracle) recordLocked(key []byte, ts kv.Timestamp) {
	if o.recent == nil {
		o.recent = make(map[string]kv.Timestamp)
	}
	if len(o.recent) >= maxRecent {
		o.pruneLocked()
		if len(o.recent) >= maxRecent {
			// Everything open is too old to keep exact history for.
			clear(o.recent)
			o.floor, o.prunedAt = o.last, 0
		}
	}
	o.recent[string(key)] = ts
}

// pruneLocked drops the history that no open transaction needs: commits
// at or before the oldest start.
func (o *oracle) pruneLocked() {
	oldest := o.last
	for s := range o.starts {
		oldest = min(oldest, s)
	}
	for k, ts := range o.recent {
		if ts <= oldest {
			delete(o.recent, k)
		}
	}
	o.prunedAt = len(o.recent)
}

// register opens a snapshot transaction: its start is the newest
// timestamp handed out, and every commit after it records its keys until
// unregister. The caller must waitVisible(start) before taking its
// snapshot, so that the snapshot holds every commit at or before start.
func (o *oracle) register() kv.Timestamp {
	o.mu.Lock()
	defer o.mu.Unlock()
	start := o.last
	o.starts[start]++
	return start
}

func (o *oracle) unregister(start kv.Timestamp) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.starts[start]--; o.starts[start] <= 0 {
		delete(o.starts, start)
	}
	switch {
	case len(o.starts) == 0:
		clear(o.recent)
		o.prunedAt = 0
	case len(o.recent) > 2*o.prunedAt+1024:
		o.pruneLocked()
	}
}

// committedSince reports whether key was committed after start, for a
// snapshot transaction registered at start: exact for every commit after
// register, conservative (true) when the history was cut short.
func (o *oracle) committedSince(key []byte, start kv.Timestamp) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if start < o.floor {
		return true
	}
	return o.recent[string(key)] > start
}

// waitVisible waits until every commit at or before ts is applied.
func (o *oracle) waitVisible(ctx context.Context, ts kv.Timestamp) error {
	for {
		o.mu.Lock()
		if len(o.pending) == 0 || o.pending[0] > ts {
			o.mu.Unlock()
			return nil
		}
		if o.appliedWake == nil {
			o.appliedWake = make(chan struct{})
		}
		wake := o.appliedWake
		o.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// applied marks the commit at ts done and moves the visible point.
func (o *oracle) applied(ts kv.Timestamp) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, p := range o.pending {
		if p == ts {
			o.pending = append(o.pending[:i], o.pending[i+1:]...)
			break
		}
	}
	v := o.last
	if len(o.pending) > 0 {
		v = o.pending[0] - 1
	}
	o.visible.Store(uint64(v))
	if o.appliedWake != nil {
		close(o.appliedWake)
		o.appliedWake = nil
	}
}

func (o *oracle) visibleTS() kv.Timestamp { return kv.Timestamp(o.visible.Load()) }
