package bucketkv

import (
	"bytes"
	"fmt"
	"hash/fnv"

	"github.com/lethedb/lethe/engine/kv"
)

// Family is a key family to spread: the keys whose first byte is Prefix,
// whose first Header bytes (Prefix included) stay in front of the bucket.
type Family struct {
	Prefix byte
	Header int
}

// layout maps keys to stored keys and back.
type layout struct {
	buckets int
	header  [256]int // by first byte; 0 for bytes that start no family
}

func newLayout(buckets int, families []Family) (layout, error) {
	l := layout{buckets: buckets}
	if buckets < 1 || buckets > 256 {
		return l, fmt.Errorf("bucketkv: %d buckets, want 1 to 256", buckets)
	}
	for _, f := range families {
		if f.Header < 1 {
			return l, fmt.Errorf("bucketkv: family %q has a header of %d bytes", f.Prefix, f.Header)
		}
		l.header[f.Prefix] = f.Header
	}
	return l, nil
}

// headerOf returns the header length of key if key is a family key long
// enough to be bucketed, else 0.
func (l *layout) headerOf(key []byte) int {
	if l.buckets == 1 || len(key) == 0 {
		return 0
	}
	h := l.header[key[0]]
	if h == 0 || len(key) <= h {
		return 0
	}
	return h
}

// familyHeader returns the header length of the family whose first byte
// is p, 0 if none (or if nothing is spread).
func (l *layout) familyHeader(p byte) int {
	if l.buckets == 1 {
		return 0
	}
	return l.header[p]
}

func (l *layout) bucket(rest []byte) byte {
	h := fnv.New32a()
	h.Write(rest)
	return byte(h.Sum32() % uint32(l.buckets))
}

// stored returns the stored key of key.
func (l *layout) stored(key []byte) []byte {
	h := l.headerOf(key)
	if h == 0 {
		return key
	}
	out := make([]byte, 0, len(key)+1)
	out = append(out, key[:h]...)
	out = append(out, l.bucket(key[h:]))
	return append(out, key[h:]...)
}

func (l *layout) storedAll(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = l.stored(k)
	}
	return out
}

// inBucket returns the stored bounds, within bucket b of header g, of the
// keys of g in [lo, hi) (hi nil: no bound).
func inBucket(g []byte, b byte, lo, hi []byte) (slo, shi []byte) {
	h := len(g)
	gb := append(append(make([]byte, 0, h+1), g...), b)
	slo = gb
	if bytes.HasPrefix(lo, g) { // lo is in g
		slo = append(bytes.Clone(gb), lo[h:]...)
	}
	shi = kv.PrefixEnd(gb)
	if hi != nil && bytes.HasPrefix(hi, g) {
		shi = append(bytes.Clone(gb), hi[h:]...)
	}
	return slo, shi
}

// segment is a part of a range: in one family (header > 0) or outside
// every family.
type segment struct {
	lo, hi []byte // hi nil: no bound
	header int
}

// segments splits [lo, hi) into parts in key order: those inside one
// family and those outside every family, less LayoutKey, which is the
// package's own: no scan returns it and no DropRange removes it.
func (l *layout) segments(lo, hi []byte) []segment {
	var out []segment
	for _, s := range l.familySegments(lo, hi) {
		if s.header != 0 || bytes.Compare(LayoutKey, s.lo) < 0 || (s.hi != nil && bytes.Compare(LayoutKey, s.hi) >= 0) {
			out = append(out, s)
			continue
		}
		if bytes.Compare(s.lo, LayoutKey) < 0 {
			out = append(out, segment{lo: s.lo, hi: LayoutKey})
		}
		after := append(bytes.Clone(LayoutKey), 0)
		if s.hi == nil || bytes.Compare(after, s.hi) < 0 {
			out = append(out, segment{lo: after, hi: s.hi})
		}
	}
	return out
}

func (l *layout) familySegments(lo, hi []byte) []segment {
	var out []segment
	cur := lo
	for p := 0; p < 256; p++ {
		h := l.familyHeader(byte(p))
		if h == 0 {
			continue
		}
		flo, fhi := []byte{byte(p)}, kv.PrefixEnd([]byte{byte(p)})
		if hi != nil && bytes.Compare(flo, hi) >= 0 {
			break
		}
		if fhi != nil && bytes.Compare(fhi, cur) <= 0 {
			continue
		}
		if bytes.Compare(cur, flo) < 0 {
			out = append(out, segment{lo: cur, hi: flo})
			cur = flo
		}
		end := fhi
		if hi != nil && (end == nil || bytes.Compare(hi, end) < 0) {
			end = hi
		}
		out = append(out, segment{lo: cur, hi: end, header: h})
		if end == nil {
			return out
		}
		cur = end
	}
	if hi == nil || bytes.Compare(cur, hi) < 0 {
		out = append(out, segment{lo: cur, hi: hi})
	}
	return out
}
