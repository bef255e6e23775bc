package engine

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// Requests that allow disk use spill what their blocking sorts and stages
// hold past the sort limit to temporary files (package spill) in a
// directory of their own under the store's scratch directory (the data
// directory's _tmp on pebble), removed when the request (or, for find, its
// cursor) ends; the store's Open removes whatever a crash left there. The
// files count against the disk's free-space reserve as the store's writes
// do, and against QuerySpillLimit per request. A store with no local disk
// spills to a directory of the system's temporary space.

// DefaultQuerySpillLimit bounds the bytes one request keeps in temporary
// files: sixteen times the request's memory bound, enough for a sort or
// $group over a few GiB while one request cannot take the whole disk
// before the free-space reserve stops it.
const DefaultQuerySpillLimit = 4 << 30

// newScratch is the temporary space of one request.
func (e *Engine) newScratch() *spill.Scratch {
	n := strconv.FormatUint(e.scratchSeq.Add(1), 10)
	if e.local == nil {
		return spill.New(spill.Config{FS: spill.OS, Dir: filepath.Join(e.scratchDir(), n), MaxBytes: e.spillLimit, Exceeded: spillExceeded})
	}
	return spill.New(spill.Config{
		FS:       e.local.ScratchFS(),
		Dir:      filepath.Join(e.scratchDir(), n),
		MaxBytes: e.spillLimit,
		Exceeded: spillExceeded,
		Check:    e.local.SpillRoom,
	})
}

func spillExceeded(limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "the query would write more than %d bytes to temporary files, Lethe's limit for one request", limit)
}

// scratchDir is the directory of the requests' temporary directories.
func (e *Engine) scratchDir() string {
	if e.local != nil {
		return e.local.ScratchDir()
	}
	return filepath.Join(os.TempDir(), "lethe-scratch-"+strconv.Itoa(os.Getpid()))
}
