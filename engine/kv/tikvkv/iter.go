package tikvkv

import (
	"bytes"
	"sort"

	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"
)

// pending is one of a transaction's own writes: its prefixed key and its
// stored value, empty for a delete (client-go's tombstone).
type pending struct {
	key, value []byte
}

// ownIn lists the transaction's own writes in the prefixed range [lo, hi),
// in key order. It is taken when an iterator is made, so that, as on
// pebble, writes made while the iterator is open are not in its walk.
// Keys and values stay in the buffer's arena, which lives as long as the
// transaction.
func ownIn(mem *tikv.MemDB, lo, hi []byte) ([]pending, error) {
	it, err := mem.Iter(lo, hi)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []pending
	for it.Valid() {
		out = append(out, pending{key: it.Key(), value: it.Value()})
		if err := it.Next(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// iter walks one way over a snapshot, with a transaction's own writes laid
// over it: a pending value replaces the stored one, a pending delete hides
// it. Client-go's scanners take no lower bound in reverse, so a reverse walk
// stops itself at lo.
type iter struct {
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
	err   error
}

func newIter(k keys, snap *txnsnapshot.KVSnapshot, mem *tikv.MemDB, lo, hi []byte, reverse bool) (*iter, error) {
	plo, phi := k.bounds(lo, hi)
	i := &iter{k: k, snap: snap, lo: plo, hi: phi, reverse: reverse}
	if mem != nil {
		own, err := ownIn(mem, plo, phi)
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
		var key, val []byte
		if c < 0 {
			i.onOwn, i.both = false, false
			key, val = i.base.Key(), i.base.Value()
		} else {
			i.onOwn, i.both = true, c == 0
			key, val = i.own[i.pos].key, i.own[i.pos].value
		}
		if i.reverse && bytes.Compare(key, i.lo) < 0 {
			return false
		}
		if i.onOwn && len(val) == 0 { // the transaction deleted it
			if !i.advance() {
				return false
			}
			continue
		}
		i.key, i.val, i.valid = i.k.out(key), decodeValue(val), true
		return true
	}
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
