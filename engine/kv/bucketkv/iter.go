package bucketkv

import (
	"bytes"
	"context"

	"github.com/lethedb/lethe/engine/kv"
)

// iter walks [lo, hi) of a bucketed store in key order: segment by
// segment, and within a family segment header by header, merging the
// header's buckets.
type iter struct {
	ctx     context.Context
	r       kv.Reader // the stored keys
	l       *layout
	reverse bool
	segs    []segment
	seg     int // index of the current segment, in walk order
	started bool

	plain kv.Iterator // a segment outside every family

	// In a family segment: pos bounds what is left of it (the next lower
	// bound going up, the upper bound going down), header is the header
	// being merged, kids its buckets' iterators and cur the one at the
	// current key (-1: none).
	pos    []byte
	header []byte
	kids   []kv.Iterator
	live   []bool
	cur    int
	key    []byte
	// single is set while the current key is a family key shorter than
	// its header, stored as it is between the headers; val is its value.
	single bool
	val    []byte

	// only, if set, limits the walk to the family keys of the buckets it
	// accepts (Subset).
	only func(bucket int) bool

	err    error
	closed bool
	// release, if set, ends what the iterator reads (a snapshot).
	release func() error
}

func newIter(ctx context.Context, r kv.Reader, l *layout, lo, hi []byte, reverse bool) *iter {
	it := &iter{ctx: ctx, r: r, l: l, reverse: reverse, segs: l.segments(lo, hi), cur: -1}
	if reverse {
		for i, j := 0, len(it.segs)-1; i < j; i, j = i+1, j-1 {
			it.segs[i], it.segs[j] = it.segs[j], it.segs[i]
		}
	}
	return it
}

func (it *iter) First() bool {
	it.closeKids()
	it.seg, it.started = 0, true
	return it.enterSegment()
}

// SeekGE moves a forward iterator to the first key >= key.
func (it *iter) SeekGE(key []byte) bool {
	it.closeKids()
	it.started = true
	for it.seg = 0; it.seg < len(it.segs); it.seg++ {
		s := it.segs[it.seg]
		if s.hi != nil && bytes.Compare(key, s.hi) >= 0 {
			continue
		}
		lo := s.lo
		if bytes.Compare(key, lo) > 0 {
			lo = key
		}
		return it.enterAt(lo)
	}
	return false
}

func (it *iter) Next() bool {
	if it.err != nil || !it.started {
		return false
	}
	if it.plain != nil {
		if it.plain.Next() {
			return true
		}
		if it.err = it.plain.Error(); it.err != nil {
			return false
		}
		return it.nextSegment()
	}
	if it.single {
		it.single = false
		return it.nextHeader()
	}
	if it.cur < 0 {
		return false
	}
	k := it.kids[it.cur]
	if it.live[it.cur] = k.Next(); !it.live[it.cur] {
		if it.err = k.Error(); it.err != nil {
			return false
		}
	}
	if it.pick() {
		return true
	}
	return it.nextHeader()
}

func (it *iter) Key() []byte {
	if it.plain != nil {
		return it.plain.Key()
	}
	return it.key
}

func (it *iter) Value() []byte {
	if it.plain != nil {
		return it.plain.Value()
	}
	if it.single {
		return it.val
	}
	return it.kids[it.cur].Value()
}

func (it *iter) Error() error { return it.err }

func (it *iter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	it.closeKids()
	if it.release != nil {
		return it.release()
	}
	return nil
}

func (it *iter) closeKids() {
	if it.plain != nil {
		it.keep(it.plain.Close())
		it.plain = nil
	}
	for _, k := range it.kids {
		it.keep(k.Close())
	}
	it.kids, it.live, it.cur, it.header, it.single = it.kids[:0], it.live[:0], -1, nil, false
}

func (it *iter) keep(err error) {
	if err != nil && it.err == nil {
		it.err = err
	}
}

// enterSegment starts the current segment from its beginning in the walk
// direction, moving on to later segments while they are empty.
func (it *iter) enterSegment() bool {
	if it.seg >= len(it.segs) {
		return false
	}
	s := it.segs[it.seg]
	if it.reverse {
		return it.enterAt(s.hi)
	}
	return it.enterAt(s.lo)
}

// enterAt starts the current segment at pos: its lower bound going up,
// its upper bound going down.
func (it *iter) enterAt(pos []byte) bool {
	s := it.segs[it.seg]
	if s.header == 0 {
		lo, hi := s.lo, s.hi
		if it.reverse {
			hi = pos
		} else {
			lo = pos
		}
		p, err := it.r.Iter(it.ctx, lo, hi, it.reverse)
		if err != nil {
			it.err = err
			return false
		}
		it.plain = p
		if p.First() {
			return true
		}
		if it.err = p.Error(); it.err != nil {
			return false
		}
		return it.nextSegment()
	}
	it.pos = pos
	return it.nextHeader()
}

func (it *iter) nextSegment() bool {
	it.closeKids()
	it.seg++
	return it.enterSegment()
}

// nextHeader finds the next header of the family segment that holds a
// key within bounds, in the walk direction, and merges its buckets.
func (it *iter) nextHeader() bool {
	s := it.segs[it.seg]
	h := s.header
	for {
		for _, k := range it.kids {
			it.keep(k.Close())
		}
		it.kids, it.live, it.cur = it.kids[:0], it.live[:0], -1
		if it.err != nil {
			return false
		}
		lo, hi := s.lo, s.hi
		if it.reverse {
			hi = it.pos
		} else {
			lo = it.pos
		}
		if hi != nil && bytes.Compare(lo, hi) >= 0 {
			return it.nextSegment()
		}
		var g []byte
		var ok bool
		var err error
		if isPoint(lo, hi, h) {
			// One key (a read of a document by its _id, say): one bucket
			// holds it, and no probe is needed to find its header.
			g, ok = bytes.Clone(lo[:h]), true
		} else {
			g, ok, err = it.probe(lo, hi, h)
		}
		if err != nil {
			it.err = err
			return false
		}
		if !ok {
			return it.nextSegment()
		}
		if it.single {
			if it.reverse {
				it.pos = it.key
			} else {
				it.pos = append(bytes.Clone(it.key), 0)
			}
			if it.only == nil {
				return true
			}
			// A key no longer than its header is in no bucket.
			it.single = false
			continue
		}
		it.header = g
		// What is left of the segment once this header is done.
		if it.reverse {
			it.pos = g
		} else {
			it.pos = kv.PrefixEnd(g)
		}
		if err := it.openKids(g, lo, hi); err != nil {
			it.err = err
			return false
		}
		if it.pick() {
			return true
		}
		if it.err != nil {
			return false
		}
		if !it.reverse && it.pos == nil {
			return it.nextSegment()
		}
	}
}

// probe finds, in the walk direction, the first header that may hold
// keys in [lo, hi), or a key of the family shorter than its header, which
// it makes current (single).
func (it *iter) probe(lo, hi []byte, h int) ([]byte, bool, error) {
	slo := lo[:min(len(lo), h)]
	shi := hi
	if hi != nil && len(hi) > h {
		shi = kv.PrefixEnd(hi[:h])
	}
	p, err := it.r.Iter(it.ctx, slo, shi, it.reverse)
	if err != nil {
		return nil, false, err
	}
	defer p.Close()
	if !p.First() {
		return nil, false, p.Error()
	}
	k := p.Key()
	if len(k) < h {
		it.single = true
		it.key = append(it.key[:0], k...)
		it.val = append(it.val[:0], p.Value()...)
		return nil, true, nil
	}
	return bytes.Clone(k[:h]), true, nil
}

// openKids opens an iterator per bucket of header g over [lo, hi), and
// one over the key equal to g, stored as it is, if it is in bounds.
func (it *iter) openKids(g, lo, hi []byte) error {
	open := func(slo, shi []byte) error {
		k, err := it.r.Iter(it.ctx, slo, shi, it.reverse)
		if err != nil {
			return err
		}
		it.kids = append(it.kids, k)
		live := k.First()
		if !live {
			if err := k.Error(); err != nil {
				return err
			}
		}
		it.live = append(it.live, live)
		return nil
	}
	if isPoint(lo, hi, len(g)) {
		if it.only != nil && !it.only(int(it.l.bucket(lo[len(g):]))) {
			return nil
		}
		slo := it.l.stored(lo)
		return open(slo, append(bytes.Clone(slo), 0))
	}
	if it.only == nil && !(bytes.HasPrefix(lo, g) && len(lo) > len(g)) && (hi == nil || bytes.Compare(hi, g) > 0) {
		if err := open(g, append(bytes.Clone(g), 0)); err != nil {
			return err
		}
	}
	for b := 0; b < it.l.buckets; b++ {
		if it.only != nil && !it.only(b) {
			continue
		}
		slo, shi := inBucket(g, byte(b), lo, hi)
		if err := open(slo, shi); err != nil {
			return err
		}
	}
	return nil
}

// isPoint reports whether [lo, hi) holds one key at most, lo, a key longer
// than the header h.
func isPoint(lo, hi []byte, h int) bool {
	return len(lo) > h && len(hi) == len(lo)+1 && hi[len(lo)] == 0 && bytes.HasPrefix(hi, lo)
}

// rest is the part of a stored key of the current header after its
// bucket: empty for the header itself.
func (it *iter) rest(stored []byte) []byte {
	if len(stored) == len(it.header) {
		return nil
	}
	return stored[len(it.header)+1:]
}

// pick makes the live bucket iterator with the smallest remainder (the
// largest, going down) current, and reports whether there is one.
func (it *iter) pick() bool {
	it.cur = -1
	for i, k := range it.kids {
		if !it.live[i] {
			continue
		}
		if it.cur < 0 {
			it.cur = i
			continue
		}
		c := bytes.Compare(it.rest(k.Key()), it.rest(it.kids[it.cur].Key()))
		if (c < 0) != it.reverse && c != 0 {
			it.cur = i
		}
	}
	if it.cur < 0 {
		return false
	}
	it.key = append(append(it.key[:0], it.header...), it.rest(it.kids[it.cur].Key())...)
	return true
}
