package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/ttlindex"
)

// Options configure an Engine.
type Options struct {
	Clock  ttlindex.Clock
	Logger *zap.Logger
	// NoReaper does not start the background reaper: expired documents stay
	// in storage, hidden, until a write replaces them, a reaper pass
	// (Reaper().Pass) runs or the _ts index is dropped. Tests use it to
	// control when purges happen.
	NoReaper bool
	// SortMemoryLimit is the most bytes of documents a sort that no index
	// provides may hold without allowDiskUse; MongoDB's 100 MiB if zero.
	SortMemoryLimit int64
}

// Engine is an open store.
type Engine struct {
	db    *pebble.DB
	clock ttlindex.Clock
	log   *zap.Logger
	locks lockTable

	mu    sync.RWMutex
	colls map[string]*Collection // by "db.name"
	seq   uint64                 // last id handed out; guarded by mu

	sortLimit int64 // see Options.SortMemoryLimit

	reaper     *ttlindex.Reaper
	stopReaper context.CancelFunc
	reaperDone chan struct{}
}

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.Clock == nil {
		opts.Clock = ttlindex.SystemClock{}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	db, err := pebble.Open(dir, storeOptions(opts.Logger))
	// Another process holding the lock fails flock with EAGAIN; pebble
	// reports a second open in this process by name.
	if errors.Is(err, syscall.EAGAIN) || (err != nil && strings.Contains(err.Error(), "lock held")) {
		return nil, fmt.Errorf("engine: %s is in use by another process (another lethe on the same --data-dir?): %w", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", dir, err)
	}
	e := &Engine{db: db, clock: opts.Clock, log: opts.Logger, colls: make(map[string]*Collection), sortLimit: opts.SortMemoryLimit}
	if e.sortLimit == 0 {
		e.sortLimit = 100 << 20
	}
	e.locks.seed = maphash.MakeSeed()
	if err := e.loadCatalog(); err != nil {
		db.Close()
		return nil, err
	}
	e.reaper = ttlindex.NewReaper(e, ttlindex.ReaperOptions{Clock: opts.Clock, Logger: opts.Logger, BatchSize: 512})
	if !opts.NoReaper {
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

// Close stops the reaper and closes the store.
func (e *Engine) Close() error {
	if e.stopReaper != nil {
		e.stopReaper()
		<-e.reaperDone
	}
	if err := e.db.Close(); err != nil {
		return fmt.Errorf("engine: close: %w", err)
	}
	return nil
}

// storeOptions tunes pebble for a document store: bloom filters on every
// level, because each insert first asks whether its _id exists and most of
// those lookups miss; a block cache and memtable sized for a server rather
// than pebble's small defaults.
func storeOptions(log *zap.Logger) *pebble.Options {
	o := &pebble.Options{
		Logger:       pebbleLogger{log.Sugar()},
		CacheSize:    256 << 20,
		MemTableSize: 64 << 20,
	}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o
}

// pebbleLogger routes pebble's own messages into zap.
type pebbleLogger struct{ s *zap.SugaredLogger }

func (l pebbleLogger) Infof(format string, args ...any)  { l.s.Debugf(format, args...) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.s.Errorf(format, args...) }
func (l pebbleLogger) Fatalf(format string, args ...any) { l.s.Fatalf(format, args...) }
