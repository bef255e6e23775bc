package spill

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// Config configures a Scratch.
type Config struct {
	// FS holds the files; nil is OS.
	FS FS
	// Dir is the directory of the files, made on the first spill and
	// removed by Close. It must belong to one Scratch alone.
	Dir string
	// MaxBytes bounds the bytes the files hold at once; zero is no bound.
	MaxBytes int64
	// Exceeded is the error of passing MaxBytes; nil gives ErrTooLarge.
	Exceeded func(limit int64) error
	// Check, when set, is asked before n more bytes go to disk; its error
	// fails the write, as when the disk is too low to take them.
	Check func(n int64) error
}

// ErrTooLarge is the default error of passing Config.MaxBytes.
var ErrTooLarge = errors.New("spill: the temporary files would pass their bound")

var errClosed = errors.New("spill: the scratch space is closed")

// Scratch is the temporary space of one request. Its methods may be called
// from several goroutines.
type Scratch struct {
	cfg Config

	mu     sync.Mutex
	made   bool  // Dir exists
	seq    int   // files made so far, for their names
	used   int64 // bytes the files hold now
	peak   int64
	closed atomic.Bool // read without mu by the runs being read
}

// New returns a Scratch; nothing is made on disk until the first spill.
func New(cfg Config) *Scratch {
	if cfg.FS == nil {
		cfg.FS = OS
	}
	return &Scratch{cfg: cfg}
}

// Close removes the directory and every file in it. Iterators still open
// fail when they next read.
func (s *Scratch) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	if !s.made {
		return nil
	}
	s.made, s.used = false, 0
	if err := s.cfg.FS.RemoveAll(s.cfg.Dir); err != nil {
		return fmt.Errorf("spill: remove %s: %w", s.cfg.Dir, err)
	}
	return nil
}

// Used is the bytes the files hold now, and Peak the most they held.
func (s *Scratch) Used() (used, peak int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.peak
}

// reserve makes room for a file of n bytes and names it.
func (s *Scratch) reserve(n int64) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.growLocked(n); err != nil {
		return "", err
	}
	name, err := s.nameLocked()
	if err != nil {
		s.used -= n
		return "", err
	}
	return name, nil
}

// grow makes room for n more bytes of a file named before, one written
// as it comes rather than with its size known.
func (s *Scratch) grow(n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.growLocked(n)
}

// create names a new file and creates it, empty.
func (s *Scratch) create() (string, io.WriteCloser, error) {
	s.mu.Lock()
	name, err := s.nameLocked()
	s.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	f, err := s.cfg.FS.Create(name)
	if err != nil {
		return "", nil, fmt.Errorf("spill: create %s: %w", name, err)
	}
	return name, f, nil
}

func (s *Scratch) growLocked(n int64) error {
	if s.closed.Load() {
		return errClosed
	}
	if s.cfg.MaxBytes > 0 && s.used+n > s.cfg.MaxBytes {
		if s.cfg.Exceeded != nil {
			return s.cfg.Exceeded(s.cfg.MaxBytes)
		}
		return ErrTooLarge
	}
	if s.cfg.Check != nil {
		if err := s.cfg.Check(n); err != nil {
			return err
		}
	}
	s.used += n
	s.peak = max(s.peak, s.used)
	return nil
}

// nameLocked names a new file, making the directory on the first.
func (s *Scratch) nameLocked() (string, error) {
	if s.closed.Load() {
		return "", errClosed
	}
	if !s.made {
		if err := s.cfg.FS.MkdirAll(s.cfg.Dir); err != nil {
			return "", fmt.Errorf("spill: make %s: %w", s.cfg.Dir, err)
		}
		s.made = true
	}
	s.seq++
	return filepath.Join(s.cfg.Dir, "run-"+strconv.Itoa(s.seq)), nil
}

// release removes a file of n bytes.
func (s *Scratch) release(name string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.made {
		return nil // Close removed it
	}
	s.used -= n
	if err := s.cfg.FS.RemoveAll(name); err != nil {
		return fmt.Errorf("spill: remove %s: %w", name, err)
	}
	return nil
}
