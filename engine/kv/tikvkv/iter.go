package tikvkv

import (
	"bytes"
	"context"
	"sort"

	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"
)

// pending is one of a transaction's own writes: its prefixed key and its
// value, whole (its chunks joined), or deleted.
type pending struct {
	key, value []byte
	deleted    bool
}

// ownIn lists the transaction's own writes in the prefixed range [lo, hi),
// in key order. It is taken when an iterator is made, so that, as on
// pebble, writes made while the iterator is open are not in its walk.
// Keys and inline values stay in the buffer's arena, which lives as long
// as the transaction; a chunked value is joined now, for its chunks may be
// written again.
func ownIn(mem *tikv.MemDB, k keys, lo, hi []byte) ([]pending, error) {
	it, err := mem.Iter(lo, hi)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []pending
	for it.Valid() {
		p := pending{key: it.Key(), deleted: len(it.Value()) == 0}
		if !p.deleted {
			if p.value, err = bufferedValue(mem, k, k.out(p.key), it.Value()); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// iter walks one way over a snapshot, with a transaction's own writes laid
// over it: a pending value replaces the stored one, a pending delete hides
// it. Client-go's scanners take no lower bound in reverse, so a reverse walk
// stops itself at lo. A chunked value is read, its chunks joined, when the
// walk reaches its key.
type iter struct {
	ctx     context.Context // of the Iter call, for reading chunks
	k       keys
	snap    *txnsnapshot.KVSnapshot
	lo, hi  []byte // prefixed bounds; hi nil only when nothing bounds the key space
	reverse bool
	own     []pending // in key order

	base  tikv.Iterator // nil until First or SeekGE
	pos   int           // the next of own in the walk's direction
	onOwn bool          // the current key is own[pos]'s, else base's
	both  bool          // ...and base is on the same key, hidden by it
	valid bool
	key   []byte
	val   []byte
	size  int // len(val), also when sizesOnly leaves val nil
	err   error
	// sizesOnly reads no chunks: a chunked value's val is nil, its size
	// the head's.
	sizesOnly bool
}

func newIter(ctx context.Context, k keys, snap *txnsnapshot.KVSnapshot, mem *tikv.MemDB, lo, hi []byte, reverse bool) (*iter, error) {
	plo, phi := k.bounds(lo, hi)
	i := &iter{ctx: ctx, k: k, snap: snap, lo: plo, hi: phi, reverse: reverse}
	if mem != nil {
		own, err := ownIn(mem, k, plo, phi)
		if err != nil {
			return nil, wrapErr("iterator", err)
		}
		i.own = own
	}
	return i, nil
}

func (i *iter) First() bool { return i.open(i.lo) }

func (i *iter) SeekGE(key []byte) bool {
	from := i.k.in(key)
	if bytes.Compare(from, i.lo) < 0 {
		from = i.lo
	}
	return i.open(from)
}

// open starts the walk at from (forward) or at the top (reverse).
func (i *iter) open(from []byte) bool {
	i.closeBase()
	i.valid = false
	if i.err != nil {
		return false
	}
	if !i.reverse && i.hi != nil && bytes.Compare(from, i.hi) >= 0 {
		return false
	}
	var err error
	if i.reverse {
		i.base, err = i.snap.IterReverse(i.hi)
		i.pos = len(i.own) - 1
	} else {
		i.base, err = i.snap.Iter(from, i.hi)
		i.pos = sort.Search(len(i.own), func(n int) bool { return bytes.Compare(i.own[n].key, from) >= 0 })
	}
	if err != nil {
		return i.fail(err)
	}
	return i.settle()
}

func (i *iter) ownOK() bool { return i.pos >= 0 && i.pos < len(i.own) }

func (i *iter) step() {
	if i.reverse {
		i.pos--
	} else {
		i.pos++
	}
}

// settle moves to the next visible key from where the two walks stand.
func (i *iter) settle() bool {
	for {
		baseOK, ownOK := i.base.Valid(), i.ownOK()
		if !baseOK && !ownOK {
			return false
		}
		c := -1 // < 0: base's key comes first; > 0: own's; 0: the same key
		switch {
		case !baseOK:
			c = 1
		case ownOK:
			c = bytes.Compare(i.base.Key(), i.own[i.pos].key)
			if i.reverse {
				c = -c
			}
		}
		var key []byte
		if c < 0 {
			i.onOwn, i.both = false, false
			key = i.base.Key()
		} else {
			i.onOwn, i.both = true, c == 0
			key = i.own[i.pos].key
		}
		if i.reverse && bytes.Compare(key, i.lo) < 0 {
			return false
		}
		if i.onOwn && i.own[i.pos].deleted {
			if !i.advance() {
				return false
			}
			continue
		}
		i.key = i.k.out(key)
		if i.onOwn {
			i.val = i.own[i.pos].value
			i.size = len(i.val)
		} else if !i.baseValue() {
			return false
		}
		i.valid = true
		return true
	}
}

// baseValue sets the current value from the base walk's, reading its
// chunks if it has any.
func (i *iter) baseValue() bool {
	stored := i.base.Value()
	h, err := decodeHead(stored)
	if err != nil {
		return i.fail(err)
	}
	if h.chunks == 0 || i.sizesOnly {
		i.val, i.size = h.value, h.size
		return true
	}
	if i.val, _, err = storedValue(i.ctx, i.k, i.snap, i.key, stored); err != nil {
		return i.fail(err)
	}
	i.size = len(i.val)
	return true
}

// advance moves past the current key.
func (i *iter) advance() bool {
	if i.onOwn {
		i.step()
		if !i.both {
			return true
		}
	}
	if err := i.base.Next(); err != nil {
		return i.fail(err)
	}
	return true
}

func (i *iter) Next() bool {
	if !i.valid {
		return false
	}
	i.valid = false
	if !i.advance() {
		return false
	}
	return i.settle()
}

func (i *iter) fail(err error) bool {
	i.err = wrapErr("scan", err)
	i.valid = false
	return false
}

func (i *iter) Key() []byte   { return i.key }
func (i *iter) Value() []byte { return i.val }
func (i *iter) Error() error  { return i.err }

func (i *iter) closeBase() {
	if i.base != nil {
		i.base.Close()
		i.base = nil
	}
}

func (i *iter) Close() error {
	i.closeBase()
	i.valid = false
	return nil
}
