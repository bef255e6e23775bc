package pebblekv

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/mongoerr"
)

// DefaultMinFreeDisk is the free space the store keeps on its filesystem
// when Options.MinFreeDisk is zero.
const DefaultMinFreeDisk = 256 << 20

// ballastName is the file in the store directory that holds part of the
// reserve. Pebble ignores files whose names it does not know.
const ballastName = "LETHE-BALLAST"

// Running out of disk space is the one failure pebble cannot take back: a
// failed WAL write leaves the commit pipeline broken and pebble ends the
// process (pebbleLogger.Fatalf) or panics (diskGuard.commit turns that into the
// same exit). So the store never lets the disk fill up through its own
// writes, in layers:
//
//  1. Before each commit, diskGuard.admit checks free space (statfs, or a
//     reading of the last few milliseconds far above the reserve). Below
//     the reserve (Options.MinFreeDisk), a batch that adds data is refused
//     with OutOfDiskSpace (14031); a batch of deletions still commits, since
//     deleting is how the user frees space, and it starts a memtable flush
//     so that the WAL and the deleted data can go.
//  2. Half of the reserve is held in a ballast file. If the disk fills
//     anyway (another process, or a flush or compaction in flight), the
//     first ENOSPC removes the ballast and pebble retries the write once
//     (vfs.OnDiskFull). The ballast comes back when space allows.
//  3. WAL and MANIFEST writes that still meet ENOSPC wait for space for a
//     while (logRetryFS): a compaction that ran out deletes its output.
//  4. Pebble retries failed flushes at once, forever; on ENOSPC the event
//     listener pauses the retry loop so that a full disk does not spin a
//     core and flood the log.
//
// At start the ballast is removed if space is below the reserve, so that
// pebble can replay its WAL on a disk that filled up; reads then work and
// writes resume, without a restart, once space is freed. If even that
// space cannot hold the replay, pebble would wait for ever inside Open; the
// store then opens read-only (mustOpenReadOnly) and needs a restart to
// write again.
//
// Background work (reclaim's flush, restoring the ballast) must neither
// touch a closed store, whose AsyncFlush panics, nor log once Store.Close
// has returned. closeMu orders both against close: the ballast goroutines
// are waited for, and a reclaim goroutine checks closed under closeMu
// before it flushes or logs. A flush is never waited for under closeMu,
// since on a full disk it may not finish.
//
// ballastMu, closeMu and MemDisk.mu are leaves: nothing else is locked
// under them, except the store's flush request under closeMu.
type diskGuard struct {
	fs      vfs.FS // unwrapped: statfs and the ballast bypass OnDiskFull
	dir     string
	minFree int64 // 0 when the reserve is off
	ballast int64
	log     *zap.Logger
	mem     *MemDisk // nil on a real disk
	// readOnly is set before open when the disk is too full for pebble to
	// replay its WAL; every write is then refused.
	readOnly bool

	db atomic.Pointer[pebble.DB] // set once open, for reclaim

	ballastMu  sync.Mutex // serializes making and removing the ballast
	restoring  atomic.Bool
	hasBallast atomic.Bool // the ballast is in place; spares a stat per commit
	opening    atomic.Bool // pebble.Open is running
	reclaiming atomic.Bool

	closeMu sync.Mutex
	closed  bool          // under closeMu: Store.Close has begun
	closing chan struct{} // closed with closed
	bg      sync.WaitGroup

	low atomic.Bool // last check found less than minFree
	// reading is the last free space a commit read, and sinceReading what
	// the commits admitted since then add (freeForCommit).
	reading      atomic.Pointer[freeReading]
	sinceReading atomic.Int64
	lastBgLog    atomic.Int64 // unix nanos of the last logged background ENOSPC
}

func newDiskGuard(dir string, opts Options) *diskGuard {
	g := &diskGuard{fs: vfs.Default, dir: dir, log: opts.Logger, mem: opts.Disk, closing: make(chan struct{})}
	if g.mem != nil {
		g.fs = g.mem.fs()
	}
	switch {
	case opts.MinFreeDisk == 0:
		g.minFree = DefaultMinFreeDisk
	case opts.MinFreeDisk > 0:
		g.minFree = opts.MinFreeDisk
	}
	g.ballast = g.minFree / 2
	return g
}

// storeFS is the filesystem pebble runs on: ENOSPC releases the ballast,
// and log writes wait a while for space (see logRetryFS).
func (g *diskGuard) storeFS() vfs.FS {
	fs := g.fs
	if g.minFree != 0 {
		fs = vfs.OnDiskFull(fs, g.releaseBallast)
	}
	return logRetryFS{FS: fs, log: g.log, walFailed: g.walFailed}
}

// free is the space available on the store's filesystem.
func (g *diskGuard) free() (int64, error) {
	u, err := g.fs.GetDiskUsage(g.dir)
	if err != nil {
		return 0, fmt.Errorf("pebblekv: free space on %s: %w", g.dir, err)
	}
	return int64(u.AvailBytes), nil
}

// beforeOpen makes room for pebble to replay its WAL when the disk is low,
// and otherwise puts the ballast in place.
func (g *diskGuard) beforeOpen() error {
	if g.minFree == 0 {
		return nil
	}
	if err := g.fs.MkdirAll(g.dir, 0o755); err != nil {
		return fmt.Errorf("pebblekv: create %s: %w", g.dir, err)
	}
	avail, err := g.free()
	if err != nil {
		g.log.Warn("cannot read free disk space; the disk-full guard is off", zap.Error(err))
		g.minFree = 0
		return nil
	}
	if avail < g.minFree {
		g.low.Store(true)
		g.log.Warn("low on disk space at start: writes that add data are refused until space is freed; reads and deletes work",
			zap.String("dir", g.dir), zap.Int64("freeBytes", avail), zap.Int64("minFreeBytes", g.minFree))
		g.releaseBallast()
		return nil
	}
	g.restoreBallast()
	return nil
}

// replaySpace is what pebble needs free to open the store in dir: it
// flushes the WALs it replays into sstables before it takes writes, and
// retries that flush forever if the disk is full, so Open would never
// return. The estimate is the unflushed data (the WALs, which pebble may
// keep one recycled log among, so at most a memtable) and a new MANIFEST.
// It reports false if there is no store yet.
func (g *diskGuard) replaySpace() (int64, bool) {
	names, err := g.fs.List(g.dir)
	if err != nil {
		return 0, false
	}
	var wals, manifest int64
	exists := false
	for _, name := range names {
		fi, err := g.fs.Stat(g.fs.PathJoin(g.dir, name))
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".log"):
			wals += fi.Size()
		case strings.HasPrefix(name, "MANIFEST-"):
			exists = true
			manifest = max(manifest, fi.Size())
		}
	}
	// The new MANIFEST is a snapshot of the live files: at most as long as
	// the current one, which also holds every edit since its own snapshot.
	return min(wals, g.memTableSize()) + min(manifest, 1<<20) + 64<<10, exists
}

// memTableSize is the memtable pebble gets: at most a quarter of the
// reserve, so that the ballast (half of it) holds a memtable's flush.
func (g *diskGuard) memTableSize() int64 {
	if g.minFree == 0 {
		return 64 << 20
	}
	return min(64<<20, max(256<<10, g.minFree/4))
}

// mustOpenReadOnly reports whether the disk is too full for pebble to open
// the store for writing; the store then opens read-only, serving reads,
// until a restart with more space.
func (g *diskGuard) mustOpenReadOnly() bool {
	need, exists := g.replaySpace()
	avail, err := g.free()
	if !exists || err != nil || avail >= need {
		return false
	}
	g.readOnly = true
	g.log.Error("the disk is too full to open the store for writing: it opens read-only; free space and restart lethe to write again",
		zap.String("dir", g.dir), zap.Int64("freeBytes", avail), zap.Int64("neededBytes", need))
	return true
}

// writable refuses every write when the store opened read-only.
func (g *diskGuard) writable() error {
	if g.readOnly {
		return mongoerr.New(mongoerr.OutOfDiskSpace,
			"Out of disk space: the store was opened read-only because the disk was too full to start; free space and restart lethe to write again")
	}
	return nil
}

// A statfs costs about 2us, as much as the rest of a small commit's
// bookkeeping, so a reading of the free space serves the commits of the
// next freeReuseFor, as long as it is freeReuseMargin above the reserve
// beyond what those commits add: closer to the reserve, or on a MemDisk,
// whose size tests change between commits, every commit reads it. What
// the margin does not cover within the window (another program filling
// the disk that fast) the ballast does, as for a compaction in flight.
const (
	freeReuseFor    = 10 * time.Millisecond
	freeReuseMargin = 64 << 20
)

// freeReading is a statfs's free space and its time.
type freeReading struct {
	avail int64
	at    time.Time
}

// freeForCommit is the free space for a commit of size bytes: the last
// reading less what the commits since have added, if it may serve (see
// freeReuseFor), or else a new reading.
func (g *diskGuard) freeForCommit(size int64) (int64, error) {
	if g.mem == nil {
		if r := g.reading.Load(); r != nil && time.Since(r.at) < freeReuseFor {
			if avail := r.avail - g.sinceReading.Add(size); avail >= g.minFree+freeReuseMargin {
				return avail, nil
			}
		}
	}
	avail, err := g.free()
	if err == nil {
		g.reading.Store(&freeReading{avail: avail, at: time.Now()})
		g.sinceReading.Store(0)
	}
	return avail, err
}

// admit decides whether a commit of size bytes may go ahead, given the
// free space; addsData is false for a commit of deletions only (and of the
// small records that log them, Options.LogsDeletes), which must go through
// on a low disk since deleting is how the user frees space.
func (g *diskGuard) admit(addsData bool, size int64) error {
	if err := g.writable(); err != nil {
		return err
	}
	if g.minFree == 0 {
		return nil
	}
	avail, err := g.freeForCommit(size)
	if err != nil {
		return nil // statfs worked at open; a transient failure is no reason to refuse
	}
	if avail >= g.minFree {
		if g.low.Swap(false) {
			g.log.Info("disk space recovered: writes resume", zap.Int64("freeBytes", avail))
		}
		if !g.hasBallast.Load() && avail >= g.minFree+g.ballast {
			g.restoreBallastAsync()
		}
		return nil
	}
	if !g.low.Swap(true) {
		g.log.Warn("low on disk space: writes that add data are refused until space is freed; reads and deletes work",
			zap.String("dir", g.dir), zap.Int64("freeBytes", avail), zap.Int64("minFreeBytes", g.minFree))
	}
	if !addsData {
		g.reclaim()
		return nil
	}
	return mongoerr.New(mongoerr.OutOfDiskSpace,
		"Out of disk space: %d bytes free on the data directory's filesystem, below the %d bytes kept free (--min-free-disk); "+
			"free space or delete data to write again", avail, g.minFree)
}

// commit commits b if the disk has room for it. Pebble panics on some WAL
// failures it cannot unwind (a failed record write or log rotation), which
// can leave its commit pipeline locked: the server's panic recovery must not
// carry on with that store, so the panic ends the process like any fatal
// store error.
func (g *diskGuard) commit(b *pebble.Batch, addsData bool, opts *pebble.WriteOptions) error {
	if err := g.admit(addsData, int64(b.Len())); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			g.fatal(fmt.Sprintf("pebble panicked in a commit: %v", p))
		}
	}()
	return b.Commit(opts)
}

// reclaim flushes the memtable in the background, once at a time, so that
// deletions reach sstables, compactions can drop what they cover, and the
// WAL holding them can be removed.
func (g *diskGuard) reclaim() {
	db := g.db.Load()
	if db == nil || !g.reclaiming.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer g.reclaiming.Store(false)
		g.closeMu.Lock()
		if g.closed {
			g.closeMu.Unlock()
			return
		}
		done, err := db.AsyncFlush()
		if err != nil {
			g.log.Warn("flush to reclaim disk space failed", zap.Error(err))
		}
		g.closeMu.Unlock()
		if err == nil {
			select {
			case <-done:
			case <-g.closing:
			}
		}
	}()
}

// goBackground runs f in a goroutine that close waits for, unless the
// store is already closing.
func (g *diskGuard) goBackground(f func()) bool {
	g.closeMu.Lock()
	defer g.closeMu.Unlock()
	if g.closed {
		return false
	}
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		f()
	}()
	return true
}

// close stops background work before the store closes: reclaim goroutines
// no longer flush or log, and close waits for the ballast's.
func (g *diskGuard) close() {
	g.closeMu.Lock()
	if !g.closed {
		g.closed = true
		close(g.closing)
	}
	g.closeMu.Unlock()
	g.bg.Wait()
}

// releaseBallast removes the ballast; it is the OnDiskFull callback.
func (g *diskGuard) releaseBallast() {
	g.ballastMu.Lock()
	defer g.ballastMu.Unlock()
	g.hasBallast.Store(false)
	p := g.fs.PathJoin(g.dir, ballastName)
	if _, err := g.fs.Stat(p); err != nil {
		return
	}
	if err := g.fs.Remove(p); err != nil {
		g.log.Error("cannot remove the disk ballast", zap.String("path", p), zap.Error(err))
		return
	}
	g.log.Warn("disk full: released the ballast to keep the store writable; writes that add data are refused until space is freed",
		zap.String("path", p), zap.Int64("bytes", g.ballast))
}

func (g *diskGuard) restoreBallastAsync() {
	if !g.restoring.CompareAndSwap(false, true) {
		return
	}
	if !g.goBackground(func() {
		defer g.restoring.Store(false)
		g.restoreBallast()
	}) {
		g.restoring.Store(false)
	}
}

// restoreBallast writes the ballast if it is missing and space allows.
func (g *diskGuard) restoreBallast() {
	g.ballastMu.Lock()
	defer g.ballastMu.Unlock()
	p := g.fs.PathJoin(g.dir, ballastName)
	if fi, err := g.fs.Stat(p); err == nil && fi.Size() >= g.ballast {
		g.hasBallast.Store(true)
		return
	}
	if avail, err := g.free(); err != nil || avail < g.minFree+g.ballast {
		return
	}
	if err := writeBallast(g.fs, p, g.ballast); err != nil {
		_ = g.fs.Remove(p)
		g.log.Warn("cannot write the disk ballast", zap.String("path", p), zap.Error(err))
		return
	}
	g.hasBallast.Store(true)
}

// writeBallast makes a file of size bytes at p, allocated (fallocate) where
// the filesystem can, else written with zeros.
func writeBallast(fs vfs.FS, p string, size int64) error {
	f, err := fs.Create(p, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if !allocate(f, size) {
		buf := make([]byte, 1<<20)
		for n := int64(0); n < size; n += int64(len(buf)) {
			if _, err := f.Write(buf[:min(int64(len(buf)), size-n)]); err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// backgroundError handles errors of pebble's flushes and compactions, which
// pebble retries by itself. On ENOSPC it pauses the retry loop (pebble's
// flush retries at once) and logs at most every ten seconds.
func (g *diskGuard) backgroundError(err error) {
	if g.mem != nil && g.mem.down() {
		select {} // the simulated machine is off: this goroutine is gone too
	}
	if !vfs.IsNoSpaceError(err) {
		g.log.Error("store background error", zap.Error(err))
		return
	}
	now := time.Now().UnixNano()
	if last := g.lastBgLog.Load(); now-last > int64(10*time.Second) && g.lastBgLog.CompareAndSwap(last, now) {
		g.log.Error("disk full: a store flush or compaction failed and will be retried", zap.Error(err))
	}
	time.Sleep(100 * time.Millisecond)
}

// flushEnd ends the process when the flush of the replayed WAL fails for
// want of space while the store opens: pebble.Open waits for that flush and
// pebble retries it for ever, so the server would never listen. Exiting
// says why; mustOpenReadOnly keeps this for disks it misjudged.
func (g *diskGuard) flushEnd(info pebble.FlushInfo) {
	if info.Err != nil && g.opening.Load() && vfs.IsNoSpaceError(info.Err) {
		g.fatal(fmt.Sprintf("the disk is too full to replay the write-ahead log at start; free space in %s and restart: %v", g.dir, info.Err))
	}
}

// walFailed ends the process when the WAL cannot be written, synced or
// closed. It is called from inside pebble, which may hold its mutexes or have
// released them on the way to a panic: on a MemDisk the calling goroutine
// therefore stops where it is, without unwinding into pebble, rather than
// exiting as fatal's does.
func (g *diskGuard) walFailed(msg string) {
	if g.mem != nil {
		g.log.Error("fatal store error; the simulated machine stops", zap.String("error", msg))
		g.mem.die(msg)
		select {}
	}
	g.fatal(msg)
}

// fatal ends the process on an error pebble cannot continue from. On a
// MemDisk the "machine" dies instead: the disk stops taking writes and the
// calling goroutine ends, so that tests can restart from what was synced.
func (g *diskGuard) fatal(msg string) {
	if g.mem != nil {
		g.log.Error("fatal store error; the simulated machine stops", zap.String("error", msg))
		g.mem.die(msg)
		runtime.Goexit()
	}
	g.log.Fatal("fatal store error: lethe exits; restart it to recover from the last synced state (if the disk is full, free space first)",
		zap.String("dir", g.dir), zap.String("error", msg))
}
