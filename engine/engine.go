package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// Options configure an Engine.
type Options struct {
	Clock  clock.Clock
	Logger *zap.Logger
	// NoReaper does not start the background reaper: expired documents stay
	// in storage, hidden, until a write replaces them, a reaper pass
	// (Reaper().Pass) runs or the _ts index is dropped. Tests use it to
	// control when purges happen.
	NoReaper bool
	// SortMemoryLimit is the most bytes of documents a sort that no index
	// provides may hold without allowDiskUse; MongoDB's 100 MiB if zero.
	SortMemoryLimit int64
	// QueryMemoryLimit is the most bytes of documents one query or
	// aggregation may hold in memory, with allowDiskUse or not; 256 MiB if
	// zero. Passing it fails with ExceededMemoryLimit. What the blocking
	// stages spill to disk with allowDiskUse does not count.
	QueryMemoryLimit int64
	// QuerySpillLimit is the most bytes one request keeps in temporary
	// files; DefaultQuerySpillLimit if zero. Passing it fails with
	// ExceededMemoryLimit.
	QuerySpillLimit int64
	// MinFreeDisk is the free space, in bytes, kept on the store's
	// filesystem: below it, writes that add data fail with OutOfDiskSpace
	// while reads and deletes go on (see diskGuard). Zero means
	// DefaultMinFreeDisk; negative turns the guard off.
	MinFreeDisk int64
	// Oplog keeps the oplog (package oplog): every write appends its
	// entries in the same batch, readable as local.oplog.rs and by
	// ReadOplog. Off if false.
	Oplog bool
	// OplogMaxBytes bounds the oplog's stored entries; OplogMaxAge how
	// long an entry is kept. The oldest entries beyond either are trimmed
	// in the background. No bound if zero.
	OplogMaxBytes int64
	OplogMaxAge   time.Duration
	// Disk, for tests, keeps the store on a simulated disk instead of in the
	// directory given to Open, which then only names the store on it.
	Disk *MemDisk
}

// Engine is an open store.
type Engine struct {
	db    *pebble.DB
	clock clock.Clock
	log   *zap.Logger
	locks lockTable
	disk  *diskGuard

	mu    sync.RWMutex
	colls map[string]*Collection // by "db.name"
	seq   uint64                 // last id handed out; guarded by mu
	// views mirrors the definitions in system.views (views.go); guarded
	// by mu, changed only with viewMu held too.
	views  map[string]*View // by "db.name"
	viewMu sync.Mutex

	sortLimit  int64         // see Options.SortMemoryLimit
	memLimit   int64         // see Options.QueryMemoryLimit
	spillLimit int64         // see Options.QuerySpillLimit
	scratchSeq atomic.Uint64 // names the requests' scratch directories

	reaper     *ttlindex.Reaper
	stopReaper context.CancelFunc
	reaperDone chan struct{}

	// oplog is nil when Options.Oplog is off.
	oplog       *oplog.Log
	stopTrimmer context.CancelFunc
	trimmerDone chan struct{}
	// streamOpts is the changeStreamOptions cluster parameter
	// (imageexpiry.go).
	streamOpts atomic.Pointer[ChangeStreamOptions]
}

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
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
	po := storeOptions(guard)
	po.ReadOnly = guard.mustOpenReadOnly()
	guard.opening.Store(true)
	db, err := pebble.Open(dir, po)
	guard.opening.Store(false)
	// Another process holding the lock fails flock with EAGAIN; pebble
	// reports a second open in this process by name.
	if errors.Is(err, syscall.EAGAIN) || (err != nil && strings.Contains(err.Error(), "lock held")) {
		return nil, fmt.Errorf("engine: %s is in use by another process (another lethe on the same --data-dir?): %w", dir, err)
	}
	if vfs.IsNoSpaceError(err) {
		return nil, fmt.Errorf("engine: open %s: the disk is full; free space and start again: %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	guard.db.Store(db)
	e := &Engine{db: db, clock: opts.Clock, log: opts.Logger, disk: guard, colls: make(map[string]*Collection), views: make(map[string]*View), sortLimit: opts.SortMemoryLimit}
	if e.sortLimit == 0 {
		e.sortLimit = 100 << 20
	}
	if e.memLimit = opts.QueryMemoryLimit; e.memLimit == 0 {
		e.memLimit = 256 << 20
	}
	if e.spillLimit = opts.QuerySpillLimit; e.spillLimit == 0 {
		e.spillLimit = DefaultQuerySpillLimit
	}
	e.locks.seed = maphash.MakeSeed()
	if err := e.loadCatalog(); err != nil {
		db.Close()
		return nil, err
	}
	if err := e.loadViews(); err != nil {
		db.Close()
		return nil, err
	}
	if err := e.loadChangeStreamOptions(); err != nil {
		db.Close()
		return nil, err
	}
	if opts.Oplog {
		if err := e.openOplog(opts); err != nil {
			db.Close()
			return nil, err
		}
		if !guard.readOnly {
			ctx, cancel := context.WithCancel(context.Background())
			e.stopTrimmer = cancel
			e.trimmerDone = make(chan struct{})
			expiryDone := make(chan struct{})
			go func() {
				defer close(expiryDone)
				e.runImageExpiry(ctx)
			}()
			go func() {
				defer close(e.trimmerDone)
				e.oplog.RunTrimmer(ctx, oplogStore{e}, opts.Logger)
				<-expiryDone
			}()
		}
	}
	e.reaper = ttlindex.NewReaper(e, ttlindex.ReaperOptions{Clock: opts.Clock, Logger: opts.Logger, BatchSize: 512})
	if !opts.NoReaper && !guard.readOnly {
		ctx, cancel := context.WithCancel(context.Background())
		e.stopReaper = cancel
		e.reaperDone = make(chan struct{})
		go func() {
			defer close(e.reaperDone)
			e.reaper.Run(ctx)
		}()
	}
	return e, nil
}

// Reaper is the engine's TTL reaper, for metrics and synchronous passes.
func (e *Engine) Reaper() *ttlindex.Reaper { return e.reaper }

// Now is the engine clock's current time in milliseconds since the epoch.
func (e *Engine) nowMillis() int64 { return e.clock.Now().UnixMilli() }

// Clock is the clock that decides expiry.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Close stops the reaper and closes the store.
func (e *Engine) Close() error {
	if e.stopReaper != nil {
		e.stopReaper()
		<-e.reaperDone
	}
	if e.stopTrimmer != nil {
		e.stopTrimmer()
		<-e.trimmerDone
	}
	e.disk.close()
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("engine: close: %w", err)
	}
	return nil
}

// storeOptions tunes pebble for a document store: bloom filters on every
// level, because each insert first asks whether its _id exists and most of
// those lookups miss; a block cache and memtable sized for a server rather
// than pebble's small defaults. The memtable is at most a quarter of the
// free-space reserve, so that the reserve holds its WAL and its flush.
func storeOptions(g *diskGuard) *pebble.Options {
	o := &pebble.Options{
		FS:        g.storeFS(),
		Logger:    pebbleLogger{s: g.log.Sugar(), fatal: g.fatal},
		CacheSize: 256 << 20,
		EventListener: &pebble.EventListener{
			BackgroundError: g.backgroundError,
			FlushEnd:        g.flushEnd,
		},
	}
	o.MemTableSize = uint64(g.memTableSize())
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
