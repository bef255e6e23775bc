package pebblekv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// MemDisk is a disk in memory for tests: a store opened with
// Options.Disk keeps its files there instead of in a directory. The disk has
// a capacity past which writes fail with ENOSPC, can fail writes and syncs
// at random, and can crash, keeping only what was synced. A store error that
// pebble treats as fatal "kills the machine" (see die) instead of exiting
// the test process.
//
// The zero value is not usable; see NewMemDisk.
type MemDisk struct {
	mem *vfs.MemFS

	// mu serializes mutating operations so that the space check and the
	// write it admits are atomic, and so that Crash sees a still disk.
	mu       sync.Mutex
	capacity int64
	// keepFree, when positive, is another program that takes any space
	// the store frees beyond keepFree bytes free; see TakeFreedSpace.
	keepFree int64
	dead     bool // crashed or died: nothing reaches this disk any more
	faults   *rand.Rand
	faultP   float64
	injected int

	fatal atomic.Pointer[string] // the fatal store error that killed the machine
}

// NewMemDisk returns an empty disk of capacity bytes.
func NewMemDisk(capacity int64) *MemDisk {
	return &MemDisk{mem: vfs.NewCrashableMem(), capacity: capacity}
}

// SetCapacity changes the size of the disk, as when a user frees space that
// is not the store's.
// It ends TakeFreedSpace.
func (d *MemDisk) SetCapacity(capacity int64) {
	d.mu.Lock()
	d.capacity, d.keepFree = capacity, 0
	d.mu.Unlock()
}

// TakeFreedSpace leaves free bytes free now and, until the next SetCapacity,
// lets another program take whatever the store frees beyond that, so that a
// background compaction or file deletion cannot make room behind a test's
// back.
func (d *MemDisk) TakeFreedSpace(free int64) {
	d.mu.Lock()
	d.capacity, d.keepFree = d.usedLocked()+free, free
	d.mu.Unlock()
}

// capacityLocked is the disk's size once the other program of
// TakeFreedSpace has taken what it can.
func (d *MemDisk) capacityLocked(used int64) int64 {
	if d.keepFree > 0 && d.capacity > used+d.keepFree {
		d.capacity = used + d.keepFree
	}
	return d.capacity
}

// Used is the number of bytes the files on the disk hold.
func (d *MemDisk) Used() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.usedLocked()
}

// InjectFaults makes each later write, sync and file creation fail with EIO
// with probability p, drawn from seed; 0 stops injecting.
func (d *MemDisk) InjectFaults(seed int64, p float64) {
	d.mu.Lock()
	d.faults, d.faultP = rand.New(rand.NewPCG(uint64(seed), 0)), p
	d.mu.Unlock()
}

// Injected is how many faults InjectFaults has caused so far.
func (d *MemDisk) Injected() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.injected
}

// Fatal is the fatal store error that killed the machine, or "".
func (d *MemDisk) Fatal() string {
	if s := d.fatal.Load(); s != nil {
		return *s
	}
	return ""
}

// Crash stops the disk as a power cut would and returns the disk a restart
// finds: everything synced, and of what was not synced a random part chosen
// by seed, with faults off. Nothing written to d afterwards counts; the
// store that used d must be abandoned, not closed.
func (d *MemDisk) Crash(seed int64) *MemDisk {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	clone := d.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(50), RNG: rng})
	return &MemDisk{mem: clone, capacity: d.capacity}
}

// die is what a fatal store error does on a MemDisk: the disk stops taking
// writes, as if the process had exited, and the goroutine that hit the error
// ends so that nothing acts on a result pebble could not produce.
func (d *MemDisk) die(msg string) {
	d.fatal.CompareAndSwap(nil, &msg)
	d.mu.Lock()
	d.dead = true
	d.mu.Unlock()
}

// down reports whether the disk crashed or its machine died.
func (d *MemDisk) down() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

var errDiskDead = errors.New("memdisk: the machine is down")

// usedLocked walks the file tree; test stores hold few files.
func (d *MemDisk) usedLocked() int64 {
	var walk func(dir string) int64
	walk = func(dir string) int64 {
		names, err := d.mem.List(dir)
		if err != nil {
			return 0
		}
		var n int64
		for _, name := range names {
			p := d.mem.PathJoin(dir, name)
			fi, err := d.mem.Stat(p)
			if err != nil {
				continue
			}
			if fi.IsDir() {
				n += walk(p)
			} else {
				n += fi.Size()
			}
		}
		return n
	}
	return walk("/")
}

// mutate runs a mutating operation unless the disk is dead or a fault is
// due; grow is how many bytes it may add.
func (d *MemDisk) mutate(grow int64, faultable bool, op func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return errDiskDead
	}
	if faultable && d.faultP > 0 && d.faults.Float64() < d.faultP {
		d.injected++
		return fmt.Errorf("memdisk: injected fault: %w", syscall.EIO)
	}
	if used := d.usedLocked(); grow > 0 && used+grow > d.capacityLocked(used) {
		return &os.PathError{Op: "write", Path: "memdisk", Err: syscall.ENOSPC}
	}
	return op()
}

// fs is the vfs.FS the store is opened on.
func (d *MemDisk) fs() vfs.FS { return memDiskFS{FS: d.mem, d: d} }

// usage reports the disk's capacity and free space, as statfs would.
func (d *MemDisk) usage() vfs.DiskUsage {
	d.mu.Lock()
	defer d.mu.Unlock()
	used := d.usedLocked()
	capacity := d.capacityLocked(used)
	return vfs.DiskUsage{AvailBytes: uint64(max(capacity-used, 0)), TotalBytes: uint64(capacity), UsedBytes: uint64(used)}
}

// memDiskFS routes every mutation of the in-memory filesystem through the
// disk's checks. Reads pass straight through.
type memDiskFS struct {
	vfs.FS
	d *MemDisk
}

func (fs memDiskFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return memDiskFile{File: f, d: fs.d}, nil
}

func (fs memDiskFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.d.mutate(0, true, func() (err error) { f, err = fs.FS.Create(name, c); return err })
	return fs.wrap(f, err)
}

func (fs memDiskFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs memDiskFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	var f vfs.File
	err := fs.d.mutate(0, true, func() (err error) { f, err = fs.FS.ReuseForWrite(oldname, newname, c); return err })
	return fs.wrap(f, err)
}

func (fs memDiskFS) Link(oldname, newname string) error {
	return fs.d.mutate(0, false, func() error { return fs.FS.Link(oldname, newname) })
}

func (fs memDiskFS) Remove(name string) error {
	return fs.d.mutate(0, false, func() error { return fs.FS.Remove(name) })
}

func (fs memDiskFS) RemoveAll(name string) error {
	return fs.d.mutate(0, false, func() error { return fs.FS.RemoveAll(name) })
}

func (fs memDiskFS) Rename(oldname, newname string) error {
	return fs.d.mutate(0, false, func() error { return fs.FS.Rename(oldname, newname) })
}

func (fs memDiskFS) MkdirAll(dir string, perm os.FileMode) error {
	return fs.d.mutate(0, false, func() error { return fs.FS.MkdirAll(dir, perm) })
}

func (fs memDiskFS) GetDiskUsage(string) (vfs.DiskUsage, error) { return fs.d.usage(), nil }

func (fs memDiskFS) Unwrap() vfs.FS { return fs.FS }

// memDiskFile checks each write against the capacity, counting every byte
// as new (overwrites of recycled logs are rare in tests, and erring towards
// full is the safe side), and lets writes and syncs fail by injection.
type memDiskFile struct {
	vfs.File
	d *MemDisk
}

func (f memDiskFile) Write(p []byte) (n int, err error) {
	err = f.d.mutate(int64(len(p)), true, func() (err error) { n, err = f.File.Write(p); return err })
	return n, err
}

func (f memDiskFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.d.mutate(int64(len(p)), true, func() (err error) { n, err = f.File.WriteAt(p, off); return err })
	return n, err
}

func (f memDiskFile) Sync() error {
	return f.d.mutate(0, true, f.File.Sync)
}

func (f memDiskFile) SyncData() error {
	return f.d.mutate(0, true, f.File.SyncData)
}

func (f memDiskFile) SyncTo(length int64) (fullSync bool, err error) {
	err = f.d.mutate(0, true, func() (err error) { fullSync, err = f.File.SyncTo(length); return err })
	return fullSync, err
}

// Capacity is the disk's size in bytes, for tests.
func (d *MemDisk) Capacity() int64 { return int64(d.usage().TotalBytes) }

// Free is the bytes a store on the disk may still write, for tests.
func (d *MemDisk) Free() int64 { return int64(d.usage().AvailBytes) }

// RemoveBallast deletes the ballast file of the store at dir on the disk,
// for tests that fill a disk to its last byte.
func (d *MemDisk) RemoveBallast(dir string) error {
	return d.mem.Remove(d.mem.PathJoin(dir, ballastName))
}
