package pebblekv

import (
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// allocate reserves size bytes for f without writing them, where the
// filesystem supports it.
func allocate(f vfs.File, size int64) bool {
	fd := f.Fd()
	return fd != vfs.InvalidFd && syscall.Fallocate(int(fd), 0, 0, size) == nil
}
