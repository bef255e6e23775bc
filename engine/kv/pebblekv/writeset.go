package pebblekv

import "unsafe"

// indexAfter is how many writes a write set holds before it indexes them
// by key: below it a lookup scans, which costs less than a map for the few
// writes of a one-document statement.
const indexAfter = 16

// writeSet is a transaction's pending writes, for its own reads. A key may
// be written more than once; its last write counts.
type writeSet struct {
	list  []pending
	small [8]pending // list's first backing array, in the transaction itself
	// index maps a key to the position of its last write, for list[:indexed].
	// Lookups bring it up to date, not add: a transaction that writes many
	// keys and never reads them back (a TTL purge, a bulk insert) commits
	// without one. Building it as writes came in was a sixth of a purge.
	index   map[string]int
	indexed int
}

func (w *writeSet) add(p pending) {
	if w.list == nil {
		w.list = w.small[:0]
	}
	w.list = append(w.list, p)
}

// useIndex reports whether lookups go through the index, having brought it
// up to date; below indexAfter writes they scan.
func (w *writeSet) useIndex() bool {
	if len(w.list) <= indexAfter {
		return false
	}
	if w.index == nil {
		w.index = make(map[string]int, len(w.list))
	}
	for i := w.indexed; i < len(w.list); i++ {
		w.index[keyString(w.list[i].key)] = i
	}
	w.indexed = len(w.list)
	return true
}

// get returns the last write of key.
func (w *writeSet) get(key []byte) (pending, bool) {
	if w.useIndex() {
		i, ok := w.index[string(key)]
		if !ok {
			return pending{}, false
		}
		return w.list[i], true
	}
	for i := len(w.list) - 1; i >= 0; i-- {
		if string(w.list[i].key) == string(key) {
			return w.list[i], true
		}
	}
	return pending{}, false
}

// each calls fn with every write, a key written twice twice.
func (w *writeSet) each(fn func(p pending)) {
	for _, p := range w.list {
		fn(p)
	}
}

// last calls fn with the last write of each key, once.
func (w *writeSet) last(fn func(p pending)) {
	for i, p := range w.list {
		if w.isLast(i) {
			fn(p)
		}
	}
}

func (w *writeSet) isLast(i int) bool {
	if w.useIndex() {
		return w.index[string(w.list[i].key)] == i
	}
	for j := i + 1; j < len(w.list); j++ {
		if string(w.list[j].key) == string(w.list[i].key) {
			return false
		}
	}
	return true
}

func (w *writeSet) len() int { return len(w.list) }

// keyString is key as a string without a copy, for map keys whose bytes
// stay put while they are in the map: the write set's copies in the
// transaction's arena, a held lock's key.
func keyString(key []byte) string { return unsafe.String(unsafe.SliceData(key), len(key)) }
