package pebblekv

import (
	"context"
	"hash/maphash"
	"slices"
	"time"
)

// lockStripes is the size of the lock table. Keys hash to stripes, so
// transactions that lock different keys commit in parallel and share WAL
// syncs; two keys on one stripe only serialize their writers.
const lockStripes = 4096

// lockTable holds one lock per stripe. A stripe is a channel of capacity
// one rather than a mutex so that a wait can be bounded by a timer and a
// context, as a pessimistic lock wait is on TiKV.
type lockTable struct {
	seed    maphash.Seed
	stripes [lockStripes]chan struct{}
}

func newLockTable() *lockTable {
	t := &lockTable{seed: maphash.MakeSeed()}
	for i := range t.stripes {
		t.stripes[i] = make(chan struct{}, 1)
	}
	return t
}

func (t *lockTable) stripe(key []byte) uint32 {
	return uint32(maphash.Bytes(t.seed, key) % lockStripes)
}

func (t *lockTable) tryLock(s uint32) bool {
	select {
	case t.stripes[s] <- struct{}{}:
		return true
	default:
		return false
	}
}

// lock waits for stripe s until the deadline (the zero time: no deadline)
// or ctx ends.
func (t *lockTable) lock(ctx context.Context, s uint32, timer *time.Timer) bool {
	if t.tryLock(s) {
		return true
	}
	select {
	case t.stripes[s] <- struct{}{}:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (t *lockTable) unlock(s uint32) { <-t.stripes[s] }

// lockSet is the set of stripes one transaction holds, ascending. A
// transaction takes stripes in ascending order when it holds none, and with
// tryLock only when it holds some, so two transactions never wait for each
// other in a cycle.
type lockSet struct {
	t    *lockTable
	held []uint32
}

func (ls *lockSet) has(s uint32) bool {
	_, ok := slices.BinarySearch(ls.held, s)
	return ok
}

// lockAll takes the given stripes in order, waiting at most wait for all of
// them; on failure it holds nothing new. The set must be empty.
func (ls *lockSet) lockAll(ctx context.Context, stripes []uint32, wait time.Duration) bool {
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	var timer *time.Timer
	for i, s := range stripes {
		if ls.t.tryLock(s) {
			continue
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		}
		if !ls.t.lock(ctx, s, timer) {
			for _, g := range stripes[:i] {
				ls.t.unlock(g)
			}
			return false
		}
	}
	ls.held = append(ls.held[:0], stripes...)
	return true
}

// tryAdd takes more stripes without blocking. It reports false, holding
// nothing new, if any is busy.
func (ls *lockSet) tryAdd(stripes []uint32) bool {
	n := len(ls.held)
	for _, s := range stripes {
		if ls.has(s) || slices.Contains(ls.held[n:], s) {
			continue
		}
		if !ls.t.tryLock(s) {
			for _, g := range ls.held[n:] {
				ls.t.unlock(g)
			}
			ls.held = ls.held[:n]
			return false
		}
		ls.held = append(ls.held, s)
	}
	slices.Sort(ls.held)
	return true
}

func (ls *lockSet) unlockAll() {
	for _, s := range ls.held {
		ls.t.unlock(s)
	}
	ls.held = ls.held[:0]
}

// HeldLocks lists the lock stripes held now, for tests that check every
// transaction released what it took.
func (s *Store) HeldLocks() []int {
	var held []int
	for i := range s.locks.stripes {
		if !s.locks.tryLock(uint32(i)) {
			held = append(held, i)
			continue
		}
		s.locks.unlock(uint32(i))
	}
	return held
}
