package pebblekv

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/lethedb/lethe/engine/kv"
)

// View opens a view of the latest committed state held by a pebble
// iterator rather than a pebble snapshot (kv.Viewer). An iterator fixes
// what it sees when it is made, and its clones see the same. Releasing a
// snapshot makes pebble look for compactions under its global lock: with a
// million documents that was a tenth of the CPU of a find through an
// index, and every other snapshot's opening and closing waited on it. An
// iterator is released for nothing, but keeps the memtables and files it
// reads until then, so it serves only reads that end within a request.
func (s *Store) View(context.Context) (kv.Snapshot, error) {
	ts := s.oracle.visibleTS()
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("pebblekv: view: %w", err)
	}
	return &view{it: it, ts: ts}, nil
}

// view is a kv.Snapshot on one unbounded pebble iterator: Get seeks it,
// Iter clones it with bounds.
type view struct {
	// mu makes the view safe for concurrent use, as a kv.Snapshot is: a
	// pebble iterator is not, and its clones are made from its state.
	mu sync.Mutex
	it *pebble.Iterator
	ts kv.Timestamp
}

func (v *view) Get(_ context.Context, key []byte) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// The whole key is the prefix (pebble's default Split), so the seek
	// consults each file's bloom filter as a point lookup does.
	if !v.it.SeekPrefixGE(key) || !bytes.Equal(v.it.Key(), key) {
		if err := v.it.Error(); err != nil {
			return nil, fmt.Errorf("pebblekv: get: %w", err)
		}
		return nil, kv.ErrNotFound
	}
	val, err := v.it.ValueAndErr()
	if err != nil {
		return nil, fmt.Errorf("pebblekv: get: %w", err)
	}
	return append([]byte(nil), val...), nil
}

func (v *view) Iter(_ context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	it, err := v.it.Clone(pebble.CloneOptions{IterOptions: &pebble.IterOptions{LowerBound: lo, UpperBound: hi}})
	if err != nil {
		return nil, fmt.Errorf("pebblekv: iterator: %w", err)
	}
	return &iter{it: it, reverse: reverse}, nil
}

func (v *view) TS() kv.Timestamp { return v.ts }

// Close releases the view; iterators it opened stay valid until their own
// Close.
func (v *view) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.it.Close()
}
