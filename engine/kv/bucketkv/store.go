package bucketkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/lethedb/lethe/engine/kv"
)

// LayoutKey holds the number of buckets of a store's layout. It must lie
// outside every family.
var LayoutKey = []byte("\x00bucketkv-buckets")

// Options configure Open.
type Options struct {
	// Buckets is the number of buckets of a new store, at most 256.
	Buckets int
	// Families are the key families to spread.
	Families []Family
}

// Open wraps s. A store that holds a layout keeps its number of buckets;
// an empty one gets opts.Buckets; one that holds family keys but no layout
// was written unspread, and stays so (one bucket).
func Open(ctx context.Context, s kv.Store, opts Options) (kv.Store, error) {
	n, err := storedBuckets(ctx, s, opts)
	if err != nil {
		return nil, err
	}
	l, err := newLayout(n, opts.Families)
	if err != nil {
		return nil, err
	}
	return &store{s: s, l: l}, nil
}

func storedBuckets(ctx context.Context, s kv.Store, opts Options) (int, error) {
	v, err := s.Get(ctx, LayoutKey)
	if err == nil {
		n, perr := strconv.Atoi(string(v))
		if perr != nil {
			return 0, fmt.Errorf("bucketkv: the stored layout %q: %w", v, perr)
		}
		return n, nil
	}
	if !errors.Is(err, kv.ErrNotFound) {
		return 0, fmt.Errorf("bucketkv: read the layout: %w", err)
	}
	n := opts.Buckets
	for _, f := range opts.Families {
		it, err := s.Iter(ctx, []byte{f.Prefix}, kv.PrefixEnd([]byte{f.Prefix}), false)
		if err != nil {
			return 0, fmt.Errorf("bucketkv: look for unspread keys: %w", err)
		}
		found := it.First()
		err = errors.Join(it.Error(), it.Close())
		if err != nil {
			return 0, fmt.Errorf("bucketkv: look for unspread keys: %w", err)
		}
		if found {
			n = 1
		}
	}
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := tx.Set(LayoutKey, []byte(strconv.Itoa(n))); err != nil {
		return 0, err
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		// Another front-end stored one first: use it.
		if kv.IsConflict(err) {
			return storedBuckets(ctx, s, opts)
		}
		return 0, fmt.Errorf("bucketkv: store the layout: %w", err)
	}
	return n, nil
}

type store struct {
	s kv.Store
	l layout
}

// Unwrap returns the spread store (kv.Unwrap).
func (s *store) Unwrap() kv.Store { return s.s }

func (s *store) Get(ctx context.Context, key []byte) ([]byte, error) {
	return s.s.Get(ctx, s.l.stored(key))
}

// Iter reads one snapshot: the store's own reads are each consistent, and
// a walk opens an iterator per bucket and probes between headers.
func (s *store) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	sn, err := s.s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	it := newIter(ctx, sn, &s.l, lo, hi, reverse)
	it.release = sn.Close
	return it, nil
}

func (s *store) Begin(ctx context.Context, o kv.TxnOptions) (kv.Txn, error) {
	t, err := s.s.Begin(ctx, o)
	if err != nil {
		return nil, err
	}
	return &txn{t: t, l: &s.l}, nil
}

func (s *store) Snapshot(ctx context.Context) (kv.Snapshot, error) {
	sn, err := s.s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return &snapshot{Snapshot: sn, l: &s.l}, nil
}

func (s *store) Now(ctx context.Context) (kv.Timestamp, error) { return s.s.Now(ctx) }

// DropRange drops the stored ranges of [lo, hi).
func (s *store) DropRange(ctx context.Context, lo, hi []byte) error {
	for _, r := range s.l.storedRanges(lo, hi) {
		if err := s.s.DropRange(ctx, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

func (s *store) ApproximateSize(ctx context.Context, lo, hi []byte) (int64, error) {
	var total int64
	for _, r := range s.l.storedRanges(lo, hi) {
		n, err := s.s.ApproximateSize(ctx, r[0], r[1])
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func (s *store) Close() error { return s.s.Close() }

// storedRanges are the stored ranges that hold exactly the keys of
// [lo, hi): a family segment's bound inside a header becomes one range
// per bucket for that header, and the whole headers between are stored as
// they are ordered.
func (l *layout) storedRanges(lo, hi []byte) [][2][]byte {
	var out [][2][]byte
	for _, seg := range l.segments(lo, hi) {
		h := seg.header
		if h == 0 {
			out = append(out, [2][]byte{seg.lo, seg.hi})
			continue
		}
		mid := [2][]byte{seg.lo, seg.hi}
		if len(seg.lo) > h {
			g := seg.lo[:h]
			end := kv.PrefixEnd(g)
			if seg.hi != nil && bytes.HasPrefix(seg.hi, g) {
				end = seg.hi
			}
			for b := 0; b < l.buckets; b++ {
				slo, shi := inBucket(g, byte(b), seg.lo, end)
				out = append(out, [2][]byte{slo, shi})
			}
			mid[0] = kv.PrefixEnd(g)
		}
		if seg.hi != nil && len(seg.hi) > h && (mid[0] == nil || bytes.Compare(mid[0], seg.hi) < 0) {
			g := seg.hi[:h]
			if bytes.Compare(mid[0], g) < 0 {
				out = append(out, [2][]byte{mid[0], g})
			}
			for b := 0; b < l.buckets; b++ {
				slo, shi := inBucket(g, byte(b), g, seg.hi)
				out = append(out, [2][]byte{slo, shi})
			}
			continue
		}
		if mid[0] != nil && (mid[1] == nil || bytes.Compare(mid[0], mid[1]) < 0) {
			out = append(out, mid)
		}
	}
	return out
}

type snapshot struct {
	kv.Snapshot
	l *layout
}

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	return s.Snapshot.Get(ctx, s.l.stored(key))
}

func (s *snapshot) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	return newIter(ctx, s.Snapshot, s.l, lo, hi, reverse), nil
}

type txn struct {
	t kv.Txn
	l *layout
}

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	return t.t.Get(ctx, t.l.stored(key))
}

func (t *txn) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	return newIter(ctx, t.t, t.l, lo, hi, reverse), nil
}

func (t *txn) Set(key, value []byte) error { return t.t.Set(t.l.stored(key), value) }
func (t *txn) Delete(key []byte) error     { return t.t.Delete(t.l.stored(key)) }

func (t *txn) Buffered(key []byte) ([]byte, bool) { return t.t.Buffered(t.l.stored(key)) }

func (t *txn) LockKeys(ctx context.Context, o kv.LockOptions, keys ...[]byte) error {
	return t.t.LockKeys(ctx, o, t.l.storedAll(keys)...)
}

func (t *txn) Locked(key []byte) bool { return t.t.Locked(t.l.stored(key)) }
func (t *txn) Size() int              { return t.t.Size() }
func (t *txn) Empty() bool            { return t.t.Empty() }
func (t *txn) StartTS() kv.Timestamp  { return t.t.StartTS() }

func (t *txn) Commit(ctx context.Context, d kv.Durability) (kv.Timestamp, error) {
	return t.t.Commit(ctx, d)
}

func (t *txn) Rollback() { t.t.Rollback() }
