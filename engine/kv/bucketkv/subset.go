package bucketkv

import (
	"context"

	"github.com/lethedb/lethe/engine/kv"
)

// A subset of the buckets is how work on a family is divided between
// processes sharing one store (the TTL reaper's ranges, engine/reapshare):
// a bucket of a header is one contiguous range of stored keys, so a process
// that scans only its buckets reads only its own keys, with one iterator
// per bucket, and never steps over another's.

// Buckets returns the number of buckets s (or a store it wraps, through
// Unwrap) spreads its families over: 1 if it spreads nothing.
func Buckets(s kv.Store) int {
	if b := find(s); b != nil {
		return b.l.buckets
	}
	return 1
}

// BucketOf returns the bucket s keeps key in, and false if key is not a
// spread family key (it then lies outside every bucket).
func BucketOf(s kv.Store, key []byte) (int, bool) {
	b := find(s)
	if b == nil {
		return 0, false
	}
	h := b.l.headerOf(key)
	if h == 0 {
		return 0, false
	}
	return int(b.l.bucket(key[h:])), true
}

// Subset returns a reader of s's latest committed state that sees, of the
// spread family keys, only those kept in a bucket keep accepts; every key
// outside the families is seen as through s. A range of a family is read
// with one iterator per accepted bucket. If s spreads nothing, Subset
// returns s itself: its one bucket, 0, is all there is.
func Subset(s kv.Store, keep func(bucket int) bool) kv.Reader {
	b := find(s)
	if b == nil || b.l.buckets == 1 {
		return s
	}
	return &subset{s: b, keep: keep}
}

// find returns the bucketkv store s is or wraps, nil if none.
func find(s kv.Store) *store {
	for {
		if b, ok := s.(*store); ok {
			return b
		}
		w, ok := s.(interface{ Unwrap() kv.Store })
		if !ok {
			return nil
		}
		s = w.Unwrap()
	}
}

type subset struct {
	s    *store
	keep func(int) bool
}

func (r *subset) Get(ctx context.Context, key []byte) ([]byte, error) {
	if !r.sees(key) {
		return nil, kv.ErrNotFound
	}
	return r.s.Get(ctx, key)
}

// Iter reads one snapshot, as the store's own Iter does.
func (r *subset) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	sn, err := r.s.s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	it := newIter(ctx, sn, &r.s.l, lo, hi, reverse)
	it.only = r.keep
	it.release = sn.Close
	return it, nil
}

// sees reports whether the subset holds key.
func (r *subset) sees(key []byte) bool {
	h := r.s.l.headerOf(key)
	if h == 0 {
		// A family key no longer than its header is in no bucket.
		return len(key) == 0 || r.s.l.familyHeader(key[0]) == 0
	}
	return r.keep(int(r.s.l.bucket(key[h:])))
}
