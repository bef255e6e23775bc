package spill

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Spool keeps records in the order they are added, to be read back in
// that order as many times as needed, as the input of several pipelines
// is: in memory up to a budget and, past it, all of them in one file of a
// Scratch, written once as they come.
type Spool struct {
	sc     *Scratch
	budget int64
	recs   [][]byte
	held   int64
	n      int

	// The file, once the records passed the budget.
	name string
	f    io.WriteCloser
	w    *bufio.Writer
	gw   *growingWriter
	err  error // the first failure to write, which the file keeps
}

// NewSpool returns a Spool that spills to sc once it holds more than
// budget bytes. A nil sc never spills: the caller bounds what it holds.
func NewSpool(sc *Scratch, budget int64) *Spool {
	return &Spool{sc: sc, budget: budget}
}

// Add adds rec, which the Spool keeps: the caller must not change it.
func (s *Spool) Add(ctx context.Context, rec []byte) error {
	if s.n++; s.n%256 == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	if s.err != nil {
		return s.err
	}
	if s.name != "" {
		return s.write(rec)
	}
	s.recs = append(s.recs, rec)
	s.held += int64(len(rec)) + RecordOverhead
	if s.sc != nil && s.held > s.budget {
		return s.spill()
	}
	return nil
}

// Held is the bytes of records the Spool holds in memory.
func (s *Spool) Held() int64 { return s.held }

// Spilled reports whether the records went to disk.
func (s *Spool) Spilled() bool { return s.name != "" }

// spill writes the records held to a new file, which takes those added
// after them too.
func (s *Spool) spill() error {
	name, f, err := s.sc.create()
	if err != nil {
		s.err = err
		return err
	}
	s.name, s.f = name, f
	s.gw = &growingWriter{sc: s.sc, f: f}
	s.w = bufio.NewWriterSize(s.gw, bufSize)
	for i, r := range s.recs {
		if err := s.write(r); err != nil {
			return err
		}
		s.recs[i] = nil // on disk: no longer ours to keep alive
	}
	s.recs, s.held = nil, 0
	return nil
}

// write appends rec to the file.
func (s *Spool) write(rec []byte) error {
	var lenBuf [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(lenBuf[:], uint64(len(rec)))
	_, err := s.w.Write(lenBuf[:n])
	if err == nil {
		_, err = s.w.Write(rec)
	}
	return s.fail(err)
}

// fail keeps err, the first failure to write the file, with its context.
func (s *Spool) fail(err error) error {
	if err == nil {
		return nil
	}
	if s.err == nil {
		s.err = fmt.Errorf("spill: write %s: %w", s.name, err)
	}
	return s.err
}

// finish flushes and closes the file, before it is read.
func (s *Spool) finish() error {
	if s.err != nil || s.w == nil {
		return s.err
	}
	err := s.fail(s.w.Flush())
	s.w = nil
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = s.fail(cerr)
	}
	s.f = nil
	return err
}

// Each calls fn with each record in the order they were added, until fn
// fails. fn may keep the records. No record may be added after.
func (s *Spool) Each(ctx context.Context, fn func(rec []byte) error) error {
	if err := s.finish(); err != nil {
		return err
	}
	if s.name == "" {
		for i, r := range s.recs {
			if i%256 == 255 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	f, err := s.sc.cfg.FS.Open(s.name)
	if err != nil {
		return fmt.Errorf("spill: open %s: %w", s.name, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, bufSize)
	for i := 0; ; i++ {
		if i%256 == 255 && ctx.Err() != nil {
			return ctx.Err()
		}
		rec, err := readRecord(s.sc, r, s.name)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// Close drops the records and removes the file.
func (s *Spool) Close() error {
	s.recs, s.held = nil, 0
	if s.err == nil {
		s.err = errors.New("spill: the spool is closed")
	}
	if s.name == "" {
		return nil
	}
	var err error
	if s.f != nil {
		err = s.f.Close()
		s.f, s.w = nil, nil
	}
	if rerr := s.sc.release(s.name, s.gw.size); err == nil {
		err = rerr
	}
	s.name = ""
	return err
}

// growingWriter writes a file whose size is not known before, asking
// the Scratch for room before each write.
type growingWriter struct {
	sc   *Scratch
	f    io.Writer
	size int64 // bytes the Scratch counts for the file
}

func (g *growingWriter) Write(p []byte) (int, error) {
	if err := g.sc.grow(int64(len(p))); err != nil {
		return 0, err
	}
	g.size += int64(len(p))
	return g.f.Write(p)
}
