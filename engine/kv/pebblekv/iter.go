package pebblekv

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethedb/lethe/engine/kv"
)

// iter is a pebble iterator walking one way.
type iter struct {
	it      *pebble.Iterator
	reverse bool
}

func newIter(ctx context.Context, r pebble.Reader, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	it, err := r.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("pebblekv: iterator: %w", err)
	}
	return &iter{it: it, reverse: reverse}, nil
}

func (i *iter) First() bool {
	if i.reverse {
		return i.it.Last()
	}
	return i.it.First()
}

func (i *iter) SeekGE(key []byte) bool {
	if i.reverse {
		panic("pebblekv: SeekGE on a reverse iterator")
	}
	return i.it.SeekGE(key)
}

func (i *iter) Next() bool {
	if i.reverse {
		return i.it.Prev()
	}
	return i.it.Next()
}

func (i *iter) Key() []byte   { return i.it.Key() }
func (i *iter) Value() []byte { return i.it.Value() }
func (i *iter) Error() error  { return i.it.Error() }
func (i *iter) Close() error  { return i.it.Close() }

// pendingIn are a transaction's own writes in [lo, hi), in key order.
func (t *txn) pendingIn(lo, hi []byte) []pending {
	var out []pending
	t.writes.last(func(p pending) {
		if bytes.Compare(p.key, lo) >= 0 && (hi == nil || bytes.Compare(p.key, hi) < 0) {
			out = append(out, p)
		}
	})
	slices.SortFunc(out, func(a, b pending) int { return bytes.Compare(a.key, b.key) })
	return out
}

// mergeIter lays a transaction's own writes over the iterator of what it
// reads: a pending value replaces the stored one, a pending delete hides
// it.
type mergeIter struct {
	base    kv.Iterator
	own     []pending // in the walk's order
	reverse bool
	i       int  // the next of own to merge
	baseOK  bool // base is positioned on a key
	useOwn  bool // the current key is cur, one of own; else base's
	cur     pending
	valid   bool
}

func newMergeIter(base kv.Iterator, own []pending, reverse bool) *mergeIter {
	if reverse {
		slices.Reverse(own)
	}
	return &mergeIter{base: base, own: own, reverse: reverse}
}

// cmp orders a and b in the walk's direction.
func (m *mergeIter) cmp(a, b []byte) int {
	if m.reverse {
		return bytes.Compare(b, a)
	}
	return bytes.Compare(a, b)
}

// settle moves to the first visible key at or after the current positions.
func (m *mergeIter) settle() bool {
	for {
		haveOwn := m.i < len(m.own)
		switch {
		case !haveOwn && !m.baseOK:
			m.valid = false
			return false
		case haveOwn && (!m.baseOK || m.cmp(m.own[m.i].key, m.base.Key()) <= 0):
			p := m.own[m.i]
			m.i++
			if m.baseOK && bytes.Equal(p.key, m.base.Key()) {
				m.baseOK = m.base.Next()
			}
			if p.deleted {
				continue
			}
			m.cur, m.useOwn, m.valid = p, true, true
			return true
		default:
			m.useOwn, m.valid = false, true
			return true
		}
	}
}

func (m *mergeIter) First() bool {
	m.i = 0
	m.baseOK = m.base.First()
	return m.settle()
}

func (m *mergeIter) SeekGE(key []byte) bool {
	if m.reverse {
		panic("pebblekv: SeekGE on a reverse iterator")
	}
	m.i, _ = slices.BinarySearchFunc(m.own, key, func(p pending, k []byte) int { return bytes.Compare(p.key, k) })
	m.baseOK = m.base.SeekGE(key)
	return m.settle()
}

func (m *mergeIter) Next() bool {
	if !m.valid {
		return false
	}
	if !m.useOwn {
		m.baseOK = m.base.Next()
	}
	return m.settle()
}

func (m *mergeIter) Key() []byte {
	if m.useOwn {
		return m.cur.key
	}
	return m.base.Key()
}

func (m *mergeIter) Value() []byte {
	if m.useOwn {
		return m.cur.value
	}
	return m.base.Value()
}

func (m *mergeIter) Error() error { return m.base.Error() }
func (m *mergeIter) Close() error { return m.base.Close() }
