package pebblekv

import "github.com/cockroachdb/pebble/v2/vfs"

// walAllocStep is how far ahead of its writes a WAL file's disk blocks are
// reserved.
const walAllocStep = 1 << 20

// walAllocFile reserves a WAL file's blocks a megabyte ahead of its
// writes instead of pebble's whole memtable's worth (1.1 times
// MemTableSize, 70 MiB here) at the first write. Reserving ahead keeps the
// block allocations, and the metadata a sync must write for them, to one
// per step; reserving all of it at once made every WAL file, and each of
// the several that pebble keeps for reuse, take 70 MiB of disk whatever it
// held, so a store of a few megabytes used hundreds on disk.
//
// Pebble writes a WAL from one goroutine at a time (its syncingFile says
// the same of itself), so the counters need no lock.
type walAllocFile struct {
	vfs.File
	written   int64 // bytes written through this handle, from offset 0
	allocated int64 // bytes reserved from offset 0
}

// Preallocate ignores pebble's request: Write reserves in smaller steps.
func (f *walAllocFile) Preallocate(offset, length int64) error { return nil }

func (f *walAllocFile) Write(p []byte) (int, error) {
	if end := f.written + int64(len(p)); end > f.allocated {
		want := (end + walAllocStep - 1) / walAllocStep * walAllocStep
		// A failed reservation costs only the speed it buys: the write
		// allocates its blocks itself, and reports a full disk if it must.
		// It is not tried again before the next step, so that a filesystem
		// without fallocate costs no extra system call per write.
		_ = f.File.Preallocate(f.allocated, want-f.allocated)
		f.allocated = want
	}
	n, err := f.File.Write(p)
	f.written += int64(n)
	return n, err
}
