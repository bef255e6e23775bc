package engine

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// Requests that allow disk use spill what their blocking sorts and stages
// hold past the sort limit to temporary files (package spill) in a
// directory of their own under scratchDir of the data directory, removed
// when the request (or, for find, its cursor) ends; Open removes whatever a
// crash left there. The files count against the disk's free-space reserve
// as the store's writes do, and against QuerySpillLimit per request.

// scratchDir is the directory of temporary files inside the data directory.
// Pebble leaves alone what it does not know in its directory.
const scratchDir = "_tmp"

// DefaultQuerySpillLimit bounds the bytes one request keeps in temporary
// files: sixteen times the request's memory bound, enough for a sort or
// $group over a few GiB while one request cannot take the whole disk
// before the free-space reserve stops it.
const DefaultQuerySpillLimit = 4 << 30

// cleanScratch removes the temporary files of requests that ended with the
// process.
func (g *diskGuard) cleanScratch() error {
	if err := g.fs.RemoveAll(filepath.Join(g.dir, scratchDir)); err != nil {
		return fmt.Errorf("engine: remove the temporary files in %s: %w", g.dir, err)
	}
	return nil
}

// newScratch is the temporary space of one request.
func (e *Engine) newScratch() *spill.Scratch {
	n := e.scratchSeq.Add(1)
	return spill.New(spill.Config{
		FS:       scratchFS{fs: e.disk.fs},
		Dir:      filepath.Join(e.disk.dir, scratchDir, strconv.FormatUint(n, 10)),
		MaxBytes: e.spillLimit,
		Exceeded: spillExceeded,
		Check:    e.disk.spillRoom,
	})
}

func spillExceeded(limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "the query would write more than %d bytes to temporary files, Lethe's limit for one request", limit)
}

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

// scratchFS is the store's file system as package spill sees it.
type scratchFS struct{ fs vfs.FS }

func (s scratchFS) MkdirAll(dir string) error { return s.fs.MkdirAll(dir, 0o700) }

func (s scratchFS) Create(name string) (io.WriteCloser, error) {
	f, err := s.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, noSpace(err)
	}
	return scratchFile{f}, nil
}

func (s scratchFS) Open(name string) (io.ReadCloser, error) { return s.fs.Open(name) }

func (s scratchFS) RemoveAll(name string) error {
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
