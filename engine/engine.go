package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/bucketkv"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/engine/preimage"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/record"
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
	// Foreground, if set, reports whether client requests are being served;
	// the reaper yields to them (ttlindex.ReaperOptions.Busy).
	Foreground func() bool
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
	// while reads and deletes go on (see package pebblekv). Zero means
	// DefaultMinFreeDisk; negative turns the guard off.
	MinFreeDisk int64
	// CacheSize is pebble's block cache in bytes; 256 MiB if zero.
	CacheSize int64
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
	Disk *pebblekv.MemDisk
	// Store, if set, is the store to run on instead of pebble in the
	// directory given to Open; the engine closes it.
	Store kv.Store
	// Cluster configures this server's place among the servers that share
	// a sharded store (cluster.go); ignored on any other.
	Cluster ClusterOptions
}

// localStore is what a store on this machine's disk offers beyond kv.Store.
type localStore interface {
	// ReadOnly reports a store that opened read-only for want of space.
	ReadOnly() bool
	// Writable is the error every write gets on a read-only store, or nil.
	Writable() error
	ScratchDir() string
	ScratchFS() pebblekv.ScratchFS
	SpillRoom(n int64) error
	// Compact compacts [lo, hi) now.
	Compact(ctx context.Context, lo, hi []byte) error
}

// Engine is an open store.
type Engine struct {
	store kv.Store
	// local is the store when it keeps its files on this machine (pebble):
	// its free-space guard and the directory for temporary files.
	local localStore
	// sharded is set on a store split into ranges on several machines
	// (kv.Sharded): reads there favour point reads over seeks, which cost
	// a request each, and more under the buckets of spread families.
	sharded bool
	// reclaimDelay is how long after a drop its keys are reclaimed: the
	// store's version lifetime on a sharded store, else 0 (at once).
	reclaimDelay time.Duration
	stopReclaim  context.CancelFunc
	reclaimDone  chan struct{}
	clock        clock.Clock
	log          *zap.Logger

	// collators are the collations commands named lately, parsed
	// (collate.go); a leaf lock of its own.
	collators collatorCache

	mu    sync.RWMutex
	colls map[string]*Collection // by "db.name"
	// gone holds the ids of the collections dropped here, from the moment
	// a drop takes one out of colls: its catalog entry may be read until
	// the drop commits, and must not open it again (cluster.go's adopt).
	// Guarded by mu.
	gone map[uint64]bool
	// views mirrors the definitions in system.views (views.go); guarded
	// by mu, changed only with viewMu held too.
	views  map[string]*View // by "db.name"
	viewMu sync.Mutex

	sortLimit  int64         // see Options.SortMemoryLimit
	memLimit   int64         // see Options.QueryMemoryLimit
	spillLimit int64         // see Options.QuerySpillLimit
	scratchSeq atomic.Uint64 // names the requests' scratch directories
	// remoteScratch is the directory of the requests' temporary files
	// when the store is not on this machine's disk: one of the system's
	// temporary space, this engine's alone, removed by Close.
	remoteScratch string
	// catalogSeq counts the collection states installed (setState), for
	// transactions to tell what changed after their start.
	catalogSeq atomic.Uint64
	// history keeps the snapshots of snapshot reads (snapshotread.go).
	history snapshotHistory

	reaper     *ttlindex.Reaper
	stopReaper context.CancelFunc
	reaperDone chan struct{}

	// oplog is nil when Options.Oplog is off.
	oplog       *oplog.Log
	stopTrimmer context.CancelFunc
	trimmerDone chan struct{}
	// images holds the changeStreamOptions cluster parameter and applies
	// it to the pre-images (package engine/preimage).
	images *preimage.Images

	// cluster is this server's membership among the servers on a shared
	// store (cluster.go); its zero value on any other.
	cluster cluster
	// share is this server's part in the division of the reaper's work
	// among them (ttlshare.go); nil on a store that is not shared.
	share *reapShare
}

// Open opens or creates the store in dir, on pebble unless Options.Store
// gives another.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	store := opts.Store
	if store == nil {
		ps, err := pebblekv.Open(dir, pebblekv.Options{Logger: opts.Logger, MinFreeDisk: opts.MinFreeDisk, CacheSize: opts.CacheSize, Disk: opts.Disk,
			LogsDeletes: oplog.IsEntryKey})
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		store = ps
	}
	if sh, ok := kv.Unwrap(store).(kv.Sharded); ok && sh.Sharded() {
		spread, err := bucketkv.Open(context.Background(), store, bucketkv.Options{Buckets: TimeOrderedBuckets, Families: timeOrderedFamilies})
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("engine: %w", err)
		}
		store = spread
	}
	e, err := open(store, opts)
	if err != nil {
		store.Close()
		return nil, err
	}
	return e, nil
}

// TimeOrderedBuckets is how many buckets a new store on a sharded backend
// spreads each time-ordered key family over (engine/kv/bucketkv): enough
// for the inserts of a family to reach as many of TiKV's regions, few
// enough that a scan of a collection, one iterator per bucket, stays cheap.
const TimeOrderedBuckets = 16

// timeOrderedFamilies are the key families whose new keys are mostly the
// largest so far: documents by _id (ObjectIds grow with time), spread
// within each collection; the expiry entries (by _ts, or by the time a
// document's own ttl ends), within each collection and kind; the oplog,
// by timestamp.
var timeOrderedFamilies = []bucketkv.Family{
	{Prefix: record.PrefixDoc, Header: 1 + 8},
	{Prefix: ttlindex.KeyPrefix, Header: 1 + 8 + 1},
	{Prefix: oplog.Prefix, Header: 1},
}

func open(store kv.Store, opts Options) (*Engine, error) {
	e := &Engine{store: store, clock: opts.Clock, log: opts.Logger, colls: make(map[string]*Collection), gone: make(map[uint64]bool), views: make(map[string]*View), sortLimit: opts.SortMemoryLimit}
	e.local, _ = kv.Unwrap(store).(localStore)
	if e.local == nil {
		// Named, not made: the first request that spills makes it.
		e.remoteScratch = filepath.Join(os.TempDir(), fmt.Sprintf("lethe-scratch-%d-%016x", os.Getpid(), rand.Uint64()))
	}
	if sh, ok := kv.Unwrap(store).(kv.Sharded); ok && sh.Sharded() {
		e.sharded = true
		e.reclaimDelay = sh.VersionLifetime()
	}
	e.history.window = DefaultSnapshotHistory
	readOnly := e.local != nil && e.local.ReadOnly()
	if e.sortLimit == 0 {
		e.sortLimit = 100 << 20
	}
	if e.memLimit = opts.QueryMemoryLimit; e.memLimit == 0 {
		e.memLimit = 256 << 20
	}
	if e.spillLimit = opts.QuerySpillLimit; e.spillLimit == 0 {
		e.spillLimit = DefaultQuerySpillLimit
	}
	ctx := context.Background()
	if err := e.loadCatalog(ctx); err != nil {
		return nil, err
	}
	if !readOnly {
		if err := reclaim.Leftovers(ctx, e.store, e.log, e.nowMillis()); err != nil {
			return nil, err
		}
		if e.reclaimDelay > 0 {
			rctx, cancel := context.WithCancel(context.Background())
			e.stopReclaim = cancel
			e.reclaimDone = make(chan struct{})
			go func() {
				defer close(e.reclaimDone)
				e.reclaimLoop(rctx)
			}()
		}
	}
	if err := e.loadViews(); err != nil {
		return nil, err
	}
	images, err := preimage.Open(imageHost{e})
	if err != nil {
		return nil, err
	}
	e.images = images
	if opts.Oplog {
		if err := e.openOplog(opts); err != nil {
			return nil, err
		}
		if !readOnly {
			ctx, cancel := context.WithCancel(context.Background())
			e.stopTrimmer = cancel
			e.trimmerDone = make(chan struct{})
			expiryDone := make(chan struct{})
			go func() {
				defer close(expiryDone)
				e.images.Run(ctx, e.log)
			}()
			go func() {
				defer close(e.trimmerDone)
				e.oplog.RunTrimmer(ctx, oplogstore.Store{KV: e.store}, opts.Logger)
				<-expiryDone
			}()
		}
	}
	if e.sharded && !readOnly {
		if err := e.joinCluster(opts.Cluster); err != nil {
			return nil, err
		}
	}
	e.reaper = ttlindex.NewReaper(e, ttlindex.ReaperOptions{Clock: opts.Clock, Logger: opts.Logger, BatchSize: 512, Busy: opts.Foreground})
	if err := e.startReapShare(); err != nil {
		return nil, err
	}
	if !opts.NoReaper && !readOnly {
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
// StorageEngine names the store the engine runs on and reports whether its
// data outlives the process and whether it opened read-only (a full disk),
// for serverStatus.
func (e *Engine) StorageEngine() (name string, persistent, readOnly bool) {
	name, persistent = "unknown", true
	if n, ok := kv.Unwrap(e.store).(kv.Named); ok {
		name, persistent = n.Name(), n.Persistent()
	}
	return name, persistent, e.local != nil && e.local.ReadOnly()
}

// CacheStats reports the store's block cache; ok is false for a store
// without one in this process (TiKV's caches are the cluster's).
func (e *Engine) CacheStats() (stats kv.CacheStats, ok bool) {
	c, ok := kv.Unwrap(e.store).(kv.Cached)
	if !ok {
		return kv.CacheStats{}, false
	}
	return c.CacheStats(), true
}

func (e *Engine) Close() error {
	if e.stopReaper != nil {
		e.stopReaper()
		<-e.reaperDone
	}
	e.stopReapShare()
	// After the reaper's last purge: once the server is off the roster,
	// the others read past what it might still commit (oplog.Log.Share).
	e.leaveCluster()
	if e.stopReclaim != nil {
		e.stopReclaim()
		<-e.reclaimDone
	}
	if e.stopTrimmer != nil {
		e.stopTrimmer()
		<-e.trimmerDone
	}
	e.history.closeAll()
	var scratchErr error
	if e.remoteScratch != "" {
		if err := os.RemoveAll(e.remoteScratch); err != nil {
			scratchErr = fmt.Errorf("engine: remove the temporary files: %w", err)
		}
	}
	if err := e.store.Close(); err != nil {
		return errors.Join(fmt.Errorf("engine: close: %w", err), scratchErr)
	}
	return scratchErr
}

// Let is package letvars' binding of a command's let variables, named here
// too because the server reaches it through the engine.
type Let = letvars.Let

// ParseLet evaluates a let document (letvars.ParseLet).
func ParseLet(doc bson.Raw, now time.Time) (*Let, error) { return letvars.ParseLet(doc, now) }

// writable is the error every write gets when the store opened read-only
// for want of disk space, or nil.
func (e *Engine) writable() error {
	if e.local == nil {
		return nil
	}
	return e.local.Writable()
}
