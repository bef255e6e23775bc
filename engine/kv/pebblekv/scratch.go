package pebblekv

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lethedb/lethe/mongoerr"
)

// scratchDir is the directory of the engine's temporary files (spilled
// sorts and stages) inside the data directory. Pebble leaves alone what it
// does not know in its directory.
const scratchDir = "_tmp"

// cleanScratch removes the temporary files of requests that ended with the
// process.
func (g *diskGuard) cleanScratch() error {
	if err := g.fs.RemoveAll(filepath.Join(g.dir, scratchDir)); err != nil {
		return fmt.Errorf("pebblekv: remove the temporary files in %s: %w", g.dir, err)
	}
	return nil
}

// ScratchDir is the directory for the engine's temporary files, on the
// store's filesystem (see ScratchFS); Open empties it.
func (s *Store) ScratchDir() string { return filepath.Join(s.disk.dir, scratchDir) }

// ScratchFS is the store's filesystem for temporary files: a full disk is
// reported as OutOfDiskSpace, and SpillRoom keeps them out of the
// free-space reserve.
func (s *Store) ScratchFS() ScratchFS { return ScratchFS{fs: s.disk.fs} }

// SpillRoom refuses n more bytes of temporary files when they would eat
// into the free-space reserve.
func (s *Store) SpillRoom(n int64) error { return s.disk.spillRoom(n) }

// spillRoom refuses n more bytes of temporary files when they would eat
// into the free-space reserve, or pass what is free when it is off.
func (g *diskGuard) spillRoom(n int64) error {
	avail, err := g.free()
	if err != nil {
		return err
	}
	if avail-n >= g.minFree {
		return nil
	}
	return mongoerr.New(mongoerr.OutOfDiskSpace,
		"Out of disk space: a sort or $group needs %d more bytes of temporary files, and %d bytes are free on the data directory's filesystem, with %d kept free (--min-free-disk); "+
			"free space, or pass allowDiskUse: false to sort in memory", n, avail, g.minFree)
}

// ScratchFS is the store's file system as package spill sees it.
type ScratchFS struct{ fs vfs.FS }

func (s ScratchFS) MkdirAll(dir string) error { return s.fs.MkdirAll(dir, 0o700) }

func (s ScratchFS) Create(name string) (io.WriteCloser, error) {
	f, err := s.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, noSpace(err)
	}
	return scratchFile{f}, nil
}

func (s ScratchFS) Open(name string) (io.ReadCloser, error) { return s.fs.Open(name) }

func (s ScratchFS) RemoveAll(name string) error {
	if err := s.fs.RemoveAll(name); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// scratchFile reports a full disk as OutOfDiskSpace.
type scratchFile struct{ vfs.File }

func (f scratchFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, noSpace(err)
}

func noSpace(err error) error {
	if err != nil && vfs.IsNoSpaceError(err) {
		return fmt.Errorf("%w: %w", mongoerr.New(mongoerr.OutOfDiskSpace, "Out of disk space writing temporary files"), err)
	}
	return err
}
