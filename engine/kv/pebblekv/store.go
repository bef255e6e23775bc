package pebblekv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
)

// Options configure a Store.
type Options struct {
	Logger *zap.Logger
	// MinFreeDisk is the free space, in bytes, kept on the store's
	// filesystem: below it, commits that add data fail with OutOfDiskSpace
	// while reads and deletions go on (see diskGuard). Zero means
	// DefaultMinFreeDisk; negative turns the guard off.
	MinFreeDisk int64
	// Disk, for tests, keeps the store on a simulated disk instead of in the
	// directory given to Open, which then only names the store on it.
	Disk *MemDisk
	// LogsDeletes reports keys whose Set still counts as a deletion for the
	// disk guard: the small records that log a delete (oplog entries), so
	// that a delete and its log entry commit on a low disk.
	LogsDeletes func(key []byte) bool
	// CacheSize is pebble's block cache, in bytes; 256 MiB if zero.
	CacheSize int64
}

// Store is a kv.Store on a pebble database.
type Store struct {
	db     *pebble.DB
	disk   *diskGuard
	locks  *lockTable
	oracle *oracle
	opts   Options
	// cacheSize is the block cache's budget in bytes.
	cacheSize int64
}

var _ kv.Store = (*Store)(nil)

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.LogsDeletes == nil {
		opts.LogsDeletes = func([]byte) bool { return false }
	}
	guard := newDiskGuard(dir, opts)
	// Before the space check: what a crash left there may be why the disk
	// is low.
	if err := guard.cleanScratch(); err != nil {
		return nil, err
	}
	if err := guard.beforeOpen(); err != nil {
		return nil, err
	}
	po := storeOptions(guard, opts.CacheSize)
	po.ReadOnly = guard.mustOpenReadOnly()
	guard.opening.Store(true)
	db, err := pebble.Open(dir, po)
	guard.opening.Store(false)
	// Another process holding the lock fails flock with EAGAIN; pebble
	// reports a second open in this process by name.
	if errors.Is(err, syscall.EAGAIN) || (err != nil && strings.Contains(err.Error(), "lock held")) {
		return nil, fmt.Errorf("pebblekv: %s is in use by another process (another lethe on the same --data-dir?): %w", dir, err)
	}
	if vfs.IsNoSpaceError(err) {
		return nil, fmt.Errorf("pebblekv: open %s: the disk is full; free space and start again: %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("pebblekv: open %s: %w", dir, err)
	}
	guard.db.Store(db)
	return &Store{db: db, disk: guard, locks: newLockTable(), oracle: newOracle(), opts: opts, cacheSize: po.CacheSize}, nil
}

// ReadOnly reports whether the store opened read-only because the disk was
// too full to replay its log; every commit then fails.
func (s *Store) ReadOnly() bool { return s.disk.readOnly }

// Close closes the store. Transactions must be done.
func (s *Store) Close() error {
	s.disk.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("pebblekv: close: %w", err)
	}
	return nil
}

// Get reads the latest committed value of key.
func (s *Store) Get(_ context.Context, key []byte) ([]byte, error) {
	return get(s.db, key)
}

// Iter walks the latest committed state of [lo, hi).
func (s *Store) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	return newIter(ctx, s.db, lo, hi, reverse)
}

// Snapshot opens a consistent view of the latest committed state.
func (s *Store) Snapshot(context.Context) (kv.Snapshot, error) {
	ts := s.oracle.visibleTS()
	return &snapshot{snap: s.db.NewSnapshot(), ts: ts}, nil
}

// Now returns a timestamp newer than every commit acknowledged so far.
func (s *Store) Now(context.Context) (kv.Timestamp, error) { return s.oracle.now(), nil }

// DropRange deletes [lo, hi) with one range deletion. It is not synced:
// the WAL keeps it before any later commit, so a record of the reclaim
// deleted after it goes no earlier.
func (s *Store) DropRange(_ context.Context, lo, hi []byte) error {
	if err := s.db.DeleteRange(lo, hi, pebble.NoSync); err != nil {
		return fmt.Errorf("pebblekv: drop range: %w", err)
	}
	return nil
}

// ApproximateSize is pebble's estimate of the disk space of [lo, hi).
func (s *Store) ApproximateSize(_ context.Context, lo, hi []byte) (int64, error) {
	n, err := s.db.EstimateDiskUsage(lo, hi)
	if err != nil {
		return 0, fmt.Errorf("pebblekv: estimate disk usage: %w", err)
	}
	return int64(n), nil
}

// Compact compacts [lo, hi) now, for the compact command.
func (s *Store) Compact(ctx context.Context, lo, hi []byte) error {
	return s.db.Compact(ctx, lo, hi, true)
}

// Metrics are pebble's own, for serverStatus.
func (s *Store) Metrics() *pebble.Metrics { return s.db.Metrics() }

func get(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if err == pebble.ErrNotFound {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pebblekv: get: %w", err)
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}

// snapshot is a pebble snapshot with the timestamp it holds every commit of.
type snapshot struct {
	snap *pebble.Snapshot
	ts   kv.Timestamp
}

func (s *snapshot) Get(_ context.Context, key []byte) ([]byte, error) { return get(s.snap, key) }
func (s *snapshot) Iter(ctx context.Context, lo, hi []byte, reverse bool) (kv.Iterator, error) {
	return newIter(ctx, s.snap, lo, hi, reverse)
}
func (s *snapshot) TS() kv.Timestamp { return s.ts }
func (s *snapshot) Close() error     { return s.snap.Close() }

// storeOptions tunes pebble for a document store: bloom filters on every
// level, because each insert first asks whether its _id exists and most of
// those lookups miss; a block cache and memtable sized for a server rather
// than pebble's small defaults. The memtable is at most a quarter of the
// free-space reserve, so that the reserve holds its WAL and its flush, and
// at most an eighth of the cache: pebble reserves each memtable it holds
// (the one written and one kept for reuse, or one being flushed) in the
// cache's budget, so that at the default 256 MiB two 64 MiB memtables left
// blocks half the cache.
func storeOptions(g *diskGuard, cacheSize int64) *pebble.Options {
	if cacheSize <= 0 {
		cacheSize = 256 << 20
	}
	o := &pebble.Options{
		FS:        g.storeFS(),
		Logger:    pebbleLogger{s: g.log.Sugar(), fatal: g.fatal},
		CacheSize: cacheSize,
		EventListener: &pebble.EventListener{
			BackgroundError: g.backgroundError,
			FlushEnd:        g.flushEnd,
		},
	}
	o.MemTableSize = uint64(min(g.memTableSize(), max(cacheSize/8, 1<<20)))
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// pebbleLogger routes pebble's own messages into zap.
type pebbleLogger struct {
	s     *zap.SugaredLogger
	fatal func(msg string) // does not return
}

func (l pebbleLogger) Infof(format string, args ...any)  { l.s.Debugf(format, args...) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.s.Errorf(format, args...) }
func (l pebbleLogger) Fatalf(format string, args ...any) { l.fatal(fmt.Sprintf(format, args...)) }

// CacheStats reports pebble's block cache (kv.Cached). Pebble keeps its
// memtables within the same budget, so Size stays below Capacity by the
// memtables' share.
func (s *Store) CacheStats() kv.CacheStats {
	m := s.db.Metrics()
	return kv.CacheStats{Capacity: s.cacheSize, Size: m.BlockCache.Size, Hits: m.BlockCache.Hits, Misses: m.BlockCache.Misses}
}

// Name is "pebble", as --store spells it.
func (s *Store) Name() string { return "pebble" }

// Persistent reports that the data outlives the process: it is on disk.
func (s *Store) Persistent() bool { return true }

// Writable is the error every commit gets when the store opened read-only,
// or nil.
func (s *Store) Writable() error { return s.disk.writable() }

// HasBallast reports whether the disk ballast is in place, for tests.
func (s *Store) HasBallast() bool { return s.disk.hasBallast.Load() }

// Flush writes the memtable to an sstable and waits for it, for tests that
// measure disk space.
func (s *Store) Flush() error { return s.db.Flush() }
