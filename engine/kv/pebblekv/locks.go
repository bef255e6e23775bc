package pebblekv

import (
	"bytes"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// lockShards splits the lock table so that transactions locking different
// keys rarely meet on one mutex.
const lockShards = 256

// lockTable holds the locks of keys, exactly: two transactions that lock
// different keys never wait for each other, which matters once a lock is
// held for a whole multi-statement transaction rather than the instant of
// one write. A waiter sleeps on a channel that the holder closes on release,
// so a wait can be bounded by a timer and a context, as a pessimistic lock
// wait is on TiKV.
type lockTable struct {
	seed   maphash.Seed
	shards [lockShards]lockShard
}

type lockShard struct {
	mu sync.Mutex
	// m chains the held keys by hash.
	m map[uint64]*keyLock
}

// keyLock is one held key. wake is made by the first waiter and closed when
// the holder releases the key. keyLocks are pooled, so that a write that
// locks a few keys allocates nothing for them.
type keyLock struct {
	key   []byte
	hash  uint64
	owner *lockSet
	wake  chan struct{}
	next  *keyLock // same hash
}

var keyLockPool = sync.Pool{New: func() any { return new(keyLock) }}

func newLockTable() *lockTable {
	t := &lockTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = make(map[uint64]*keyLock)
	}
	return t
}

// tryLock takes key for owner if it is free or already owner's. Otherwise
// it returns a channel closed when the holder releases it. The lock is
// returned when it is new, nil otherwise.
func (t *lockTable) tryLock(key []byte, owner *lockSet) (taken *keyLock, ok bool, wake <-chan struct{}) {
	h := maphash.Bytes(t.seed, key)
	sh := &t.shards[h%lockShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for l := sh.m[h]; l != nil; l = l.next {
		if !bytes.Equal(l.key, key) {
			continue
		}
		if l.owner == owner {
			return nil, true, nil
		}
		if l.wake == nil {
			l.wake = make(chan struct{})
		}
		return nil, false, l.wake
	}
	l := keyLockPool.Get().(*keyLock)
	l.key, l.hash, l.owner, l.next = append(l.key[:0], key...), h, owner, sh.m[h]
	sh.m[h] = l
	return l, true, nil
}

// lock waits for key until timer fires or ctx ends.
func (t *lockTable) lock(ctx context.Context, key []byte, owner *lockSet, timer *time.Timer) (*keyLock, bool) {
	for {
		l, ok, wake := t.tryLock(key, owner)
		if ok {
			return l, true
		}
		select {
		case <-wake:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (t *lockTable) unlock(l *keyLock) {
	sh := &t.shards[l.hash%lockShards]
	sh.mu.Lock()
	for p := sh.m[l.hash]; p != nil; p = p.next {
		if p == l {
			break
		}
		if p.next == l {
			p.next = l.next
			break
		}
	}
	if sh.m[l.hash] == l {
		if l.next == nil {
			delete(sh.m, l.hash)
		} else {
			sh.m[l.hash] = l.next
		}
	}
	sh.mu.Unlock()
	if l.wake != nil {
		close(l.wake)
	}
	l.owner, l.wake, l.next = nil, nil, nil
	keyLockPool.Put(l)
}

// lockSet is the set of keys one transaction holds. A transaction waits
// for keys only while it holds none, taking them in ascending order, or
// within the lock wait bound; so two transactions never wait for each other
// in a cycle for longer than the bound.
type lockSet struct {
	t    *lockTable
	held []*keyLock
	// index finds a held key once there are many (a long transaction). It
	// covers held[:indexed] and is brought up to date by has, not by add:
	// a set that takes many keys and is never asked about them (a TTL
	// purge locks hundreds, and asks only under invariants) pays nothing
	// for it. Building it as keys came in was a tenth of a purge's CPU.
	index   map[string]struct{}
	indexed int
}

const lockIndexFrom = 16

func (ls *lockSet) has(key []byte) bool {
	if len(ls.held) <= lockIndexFrom {
		for _, l := range ls.held {
			if bytes.Equal(l.key, key) {
				return true
			}
		}
		return false
	}
	if ls.index == nil {
		ls.index = make(map[string]struct{}, len(ls.held))
	}
	// The index holds each key without a copy: a held lock's key does not
	// change, and the set drops it from the index before releasing the
	// lock, whose key the pool then reuses.
	for _, l := range ls.held[ls.indexed:] {
		ls.index[keyString(l.key)] = struct{}{}
	}
	ls.indexed = len(ls.held)
	_, ok := ls.index[string(key)]
	return ok
}

func (ls *lockSet) add(l *keyLock) { ls.held = append(ls.held, l) }

// sortKeys orders keys and drops repeats, so that lockers take them in one
// order.
func sortKeys(keys [][]byte) [][]byte {
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}

// lockAll takes keys in ascending order, waiting at most wait for all of
// them; on failure it holds nothing new. The set must hold nothing.
func (ls *lockSet) lockAll(ctx context.Context, keys [][]byte, wait time.Duration) bool {
	keys = sortKeys(keys)
	n := len(ls.held)
	var timer *time.Timer
	for _, key := range keys {
		k, ok, _ := ls.t.tryLock(key, ls)
		if !ok {
			if timer == nil {
				timer = time.NewTimer(wait)
				defer timer.Stop()
			}
			if k, ok = ls.t.lock(ctx, key, ls, timer); !ok {
				ls.releaseFrom(n)
				return false
			}
		}
		if k != nil {
			ls.add(k)
		}
	}
	return true
}

// tryAdd takes more keys without blocking. It reports false, holding
// nothing new, if any is held by another transaction.
func (ls *lockSet) tryAdd(keys [][]byte) bool {
	n := len(ls.held)
	for _, key := range keys {
		k, ok, _ := ls.t.tryLock(key, ls)
		if !ok {
			ls.releaseFrom(n)
			return false
		}
		if k != nil {
			ls.add(k)
		}
	}
	return true
}

// waitAdd takes more keys while holding some, waiting at most wait in all;
// on failure it holds nothing new.
func (ls *lockSet) waitAdd(ctx context.Context, keys [][]byte, wait time.Duration) bool {
	keys = sortKeys(keys)
	n := len(ls.held)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for _, key := range keys {
		k, ok := ls.t.lock(ctx, key, ls, timer)
		if !ok {
			ls.releaseFrom(n)
			return false
		}
		if k != nil {
			ls.add(k)
		}
	}
	return true
}

// releaseFrom releases the keys taken since the set held n.
func (ls *lockSet) releaseFrom(n int) {
	for i, l := range ls.held[n:] {
		if n+i < ls.indexed {
			delete(ls.index, string(l.key))
		}
		ls.t.unlock(l)
	}
	clear(ls.held[n:])
	ls.held = ls.held[:n]
	ls.indexed = min(ls.indexed, n)
}

func (ls *lockSet) unlockAll() {
	ls.index, ls.indexed = nil, 0 // dropped whole rather than key by key
	ls.releaseFrom(0)
}

// HeldLocks lists the keys locked now, for tests that check every
// transaction released what it took.
func (s *Store) HeldLocks() []string {
	var held []string
	for i := range s.locks.shards {
		sh := &s.locks.shards[i]
		sh.mu.Lock()
		for _, l := range sh.m {
			for ; l != nil; l = l.next {
				held = append(held, string(l.key))
			}
		}
		sh.mu.Unlock()
	}
	return held
}
