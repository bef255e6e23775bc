package spill

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// RecordOverhead is what the Sorter counts for each record beyond its
// bytes: the slice that holds it.
const RecordOverhead = 24

// bufSize is the buffer of each file written or read; a merge of k runs
// holds k of them.
const bufSize = 32 << 10

// maxFanIn bounds the runs merged at once, and so the files open and the
// buffers held; more runs are merged in passes.
const maxFanIn = 64

// Sorter sorts records, holding at most its budget of them in memory and
// writing the rest to sorted runs in a Scratch.
type Sorter struct {
	sc     *Scratch
	cmp    func(a, b []byte) int
	budget int64
	recs   [][]byte
	held   int64
	runs   []runFile // in the order they were written
	n      int
}

// runFile is one sorted run on disk.
type runFile struct {
	name string
	size int64
}

// NewSorter returns a Sorter of records in the order of cmp that spills to
// sc once it holds more than budget bytes. A nil sc never spills: the
// caller bounds what it holds.
func NewSorter(sc *Scratch, cmp func(a, b []byte) int, budget int64) *Sorter {
	return &Sorter{sc: sc, cmp: cmp, budget: budget}
}

// Add adds rec, which the Sorter keeps: the caller must not change it.
func (s *Sorter) Add(ctx context.Context, rec []byte) error {
	if s.n++; s.n%256 == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	s.recs = append(s.recs, rec)
	s.held += int64(len(rec)) + RecordOverhead
	if s.sc != nil && s.held > s.budget {
		return s.spill(ctx)
	}
	return nil
}

// Held is the bytes of records the Sorter holds in memory.
func (s *Sorter) Held() int64 { return s.held }

// Spilled reports whether some records went to disk.
func (s *Sorter) Spilled() bool { return len(s.runs) > 0 }

// spill writes the records held as a run.
func (s *Sorter) spill(ctx context.Context) error {
	slices.SortStableFunc(s.recs, s.cmp)
	var size int64
	var lenBuf [binary.MaxVarintLen64]byte
	for _, r := range s.recs {
		size += int64(binary.PutUvarint(lenBuf[:], uint64(len(r))) + len(r))
	}
	run, err := s.writeRun(ctx, size, func(yield func([]byte) error) error {
		for _, r := range s.recs {
			if err := yield(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, run)
	clear(s.recs)
	s.recs, s.held = s.recs[:0], 0
	return nil
}

// writeRun writes a run of size bytes with the records that each gives.
func (s *Sorter) writeRun(ctx context.Context, size int64, each func(yield func([]byte) error) error) (runFile, error) {
	name, err := s.sc.reserve(size)
	if err != nil {
		return runFile{}, err
	}
	run := runFile{name: name, size: size}
	f, err := s.sc.cfg.FS.Create(name)
	if err != nil {
		_ = s.sc.release(name, size)
		return runFile{}, fmt.Errorf("spill: create %s: %w", name, err)
	}
	w := bufio.NewWriterSize(f, bufSize)
	var lenBuf [binary.MaxVarintLen64]byte
	j := 0
	var written int64
	err = each(func(r []byte) error {
		if j++; j%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		n := binary.PutUvarint(lenBuf[:], uint64(len(r)))
		written += int64(n + len(r))
		if written > size {
			return fmt.Errorf("spill: run %s passes its reserved %d bytes", name, size)
		}
		if _, err := w.Write(lenBuf[:n]); err != nil {
			return err
		}
		_, err := w.Write(r)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.sc.release(name, size)
		if ctx.Err() != nil && err == ctx.Err() {
			return runFile{}, err
		}
		return runFile{}, fmt.Errorf("spill: write %s: %w", name, err)
	}
	return run, nil
}

// Iter sorts what was added and returns an iterator over it. The Sorter
// must not be used after.
func (s *Sorter) Iter(ctx context.Context) (*Iter, error) {
	slices.SortStableFunc(s.recs, s.cmp)
	mem := &memSource{recs: s.recs}
	s.recs, s.held = nil, 0
	if len(s.runs) == 0 {
		return &Iter{srcs: []source{mem}, cmp: s.cmp}, nil
	}
	// Merge in passes until few enough runs are left to merge with the
	// records still in memory, each pass merging the oldest runs into one
	// that takes their place, so that the order of equal records holds.
	for len(s.runs)+1 > maxFanIn {
		it, err := s.open(s.runs[:maxFanIn])
		if err != nil {
			return nil, err
		}
		var size int64
		for _, r := range s.runs[:maxFanIn] {
			size += r.size
		}
		run, err := s.writeRun(ctx, size, func(yield func([]byte) error) error {
			for {
				rec, err := it.Next(ctx)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				if err := yield(rec); err != nil {
					return err
				}
			}
		})
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		s.runs = append([]runFile{run}, s.runs[maxFanIn:]...)
	}
	it, err := s.open(s.runs)
	if err != nil {
		return nil, err
	}
	it.srcs = append(it.srcs, mem)
	s.runs = nil
	return it, nil
}

// open returns an iterator over runs, which it removes when it is done
// with them.
func (s *Sorter) open(runs []runFile) (*Iter, error) {
	it := &Iter{cmp: s.cmp}
	for _, r := range runs {
		f, err := s.sc.cfg.FS.Open(r.name)
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("spill: open %s: %w", r.name, err)
		}
		it.srcs = append(it.srcs, &fileSource{sc: s.sc, run: r, f: f, r: bufio.NewReaderSize(f, bufSize)})
	}
	return it, nil
}
