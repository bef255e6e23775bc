package pebblekv

import (
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
}

const logicalBits = 18

func newOracle() *oracle {
	o := &oracle{seed: maphash.MakeSeed()}
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
// start; it returns the index of a conflicting key, or -1. The commit
// must call applied with the timestamp once its batch is applied or has
// failed.
func (o *oracle) reserve(buckets []uint32, check bool, start kv.Timestamp) (kv.Timestamp, int) {
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
	o.pending = append(o.pending, ts)
	return ts, -1
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
}

func (o *oracle) visibleTS() kv.Timestamp { return kv.Timestamp(o.visible.Load()) }
