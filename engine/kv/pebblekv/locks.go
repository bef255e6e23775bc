package engine

import (
	"hash/maphash"
	"slices"
	"sync"
)

// lockStripes is the size of the lock table. Writers lock only the stripes
// of the keys whose uniqueness they check (_id and unique index keys), so
// writers to different keys commit in parallel and share WAL syncs.
const lockStripes = 4096

type lockTable struct {
	seed    maphash.Seed
	stripes [lockStripes]sync.Mutex
}

func (t *lockTable) stripe(space uint64, key []byte) uint32 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	var b [8]byte
	for i := range b {
		b[i] = byte(space >> (8 * i))
	}
	h.Write(b[:])
	h.Write(key)
	return uint32(h.Sum64() % lockStripes)
}

// lockSet is the set of stripes one write holds. Stripes are always taken
// in ascending order, or with TryLock when added later, so writers never
// deadlock.
type lockSet struct {
	t    *lockTable
	held []uint32
}

func (ls *lockSet) has(s uint32) bool {
	_, ok := slices.BinarySearch(ls.held, s)
	return ok
}

// lockAll takes the given stripes in order. The set must be empty.
func (ls *lockSet) lockAll(stripes []uint32) {
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, s := range stripes {
		ls.t.stripes[s].Lock()
	}
	ls.held = append(ls.held[:0], stripes...)
}

// tryAdd takes more stripes without blocking. It reports false, holding
// nothing new, if any is busy.
func (ls *lockSet) tryAdd(stripes []uint32) bool {
	var got []uint32
	for _, s := range stripes {
		if ls.has(s) || slices.Contains(got, s) {
			continue
		}
		if !ls.t.stripes[s].TryLock() {
			for _, g := range got {
				ls.t.stripes[g].Unlock()
			}
			return false
		}
		got = append(got, s)
	}
	ls.held = append(ls.held, got...)
	slices.Sort(ls.held)
	return true
}

func (ls *lockSet) unlockAll() {
	for _, s := range ls.held {
		ls.t.stripes[s].Unlock()
	}
	ls.held = ls.held[:0]
}
