package spill

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// source is one sorted sequence of records being merged.
type source interface {
	// next returns the next record, or io.EOF.
	next() ([]byte, error)
	close() error
}

// memSource is the records still in memory, sorted.
type memSource struct{ recs [][]byte }

func (m *memSource) next() ([]byte, error) {
	if len(m.recs) == 0 {
		return nil, io.EOF
	}
	r := m.recs[0]
	m.recs[0] = nil // handed out: no longer ours to keep alive
	m.recs = m.recs[1:]
	return r, nil
}

func (m *memSource) close() error { m.recs = nil; return nil }

// fileSource reads a run, removing it once read or closed.
type fileSource struct {
	sc   *Scratch
	run  runFile
	f    io.ReadCloser
	r    *bufio.Reader
	done bool
}

// maxRecord bounds a record's length as read back, so that a damaged file
// cannot make a huge allocation.
const maxRecord = 1 << 30

func (s *fileSource) next() ([]byte, error) {
	if s.done {
		return nil, io.EOF
	}
	return readRecord(s.sc, s.r, s.run.name)
}

// readRecord reads the next record of the file name, or io.EOF at its
// end.
func readRecord(sc *Scratch, r *bufio.Reader, name string) ([]byte, error) {
	if sc.closed.Load() {
		return nil, errClosed
	}
	n, err := binary.ReadUvarint(r)
	if err == io.EOF {
		return nil, io.EOF
	}
	if err == nil && n > maxRecord {
		err = fmt.Errorf("a record of %d bytes", n)
	}
	var rec []byte
	if err == nil {
		rec = make([]byte, n)
		_, err = io.ReadFull(r, rec)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("spill: read %s: %w", name, err)
	}
	return rec, nil
}

func (s *fileSource) close() error {
	if s.done {
		return nil
	}
	s.done = true
	err := s.f.Close()
	if rerr := s.sc.release(s.run.name, s.run.size); err == nil {
		err = rerr
	}
	return err
}

// Iter returns the records of a Sorter in order.
type Iter struct {
	cmp     func(a, b []byte) int
	srcs    []source
	h       mergeHeap
	started bool
	n       int
	err     error
}

// head is the next record of one source.
type head struct {
	rec []byte
	src int // index in Iter.srcs: of equal records, the lower comes first
}

type mergeHeap struct {
	heads []head
	cmp   func(a, b []byte) int
}

func (h *mergeHeap) Len() int { return len(h.heads) }
func (h *mergeHeap) Less(i, j int) bool {
	if c := h.cmp(h.heads[i].rec, h.heads[j].rec); c != 0 {
		return c < 0
	}
	return h.heads[i].src < h.heads[j].src
}
func (h *mergeHeap) Swap(i, j int) { h.heads[i], h.heads[j] = h.heads[j], h.heads[i] }
func (h *mergeHeap) Push(x any)    { h.heads = append(h.heads, x.(head)) }
func (h *mergeHeap) Pop() any {
	x := h.heads[len(h.heads)-1]
	h.heads = h.heads[:len(h.heads)-1]
	return x
}

// Next returns the next record, which the caller may keep, or io.EOF
// after the last. An iterator may outlive the request that made it (a
// find's cursor), so each call says what ends it.
func (it *Iter) Next(ctx context.Context) ([]byte, error) {
	if it.err != nil {
		return nil, it.err
	}
	if it.n++; it.n%256 == 0 && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if !it.started {
		it.started = true
		it.h.cmp = it.cmp
		for i := range it.srcs {
			if err := it.pull(i); err != nil {
				return nil, err
			}
		}
		heap.Init(&it.h)
	}
	if it.h.Len() == 0 {
		return nil, io.EOF
	}
	top := it.h.heads[0]
	rec, err := it.srcs[top.src].next()
	switch {
	case err == io.EOF:
		heap.Pop(&it.h)
		if err := it.srcs[top.src].close(); err != nil {
			it.err = err
			return nil, err
		}
	case err != nil:
		it.err = err
		return nil, err
	default:
		it.h.heads[0].rec = rec
		heap.Fix(&it.h, 0)
	}
	return top.rec, nil
}

// pull puts the first record of source i on the heap.
func (it *Iter) pull(i int) error {
	rec, err := it.srcs[i].next()
	if err == io.EOF {
		return it.srcs[i].close()
	}
	if err != nil {
		it.err = err
		return err
	}
	it.h.heads = append(it.h.heads, head{rec: rec, src: i})
	return nil
}

// Close releases the iterator's files, removing them.
func (it *Iter) Close() error {
	var err error
	for _, s := range it.srcs {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	it.srcs, it.h.heads = nil, nil
	if it.err == nil {
		it.err = errors.New("spill: the iterator is closed")
	}
	return err
}
