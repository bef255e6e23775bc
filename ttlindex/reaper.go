package ttlindex

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lethedb/lethe/clock"
	"go.uber.org/zap"
)

// Store is the engine as the reaper sees it.
type Store interface {
	// ReapBatch deletes up to limit documents (across all collections, both
	// _ts expiry and MongoDB date TTL indexes) that are due at now, and
	// reports how many it deleted, whether more are due right now, and the
	// earliest future due time it knows of (zero time if none).
	ReapBatch(ctx context.Context, now time.Time, limit int) (deleted int, more bool, next time.Time, err error)
}

// ReaperOptions configure a Reaper. The zero value of each field selects its
// default.
type ReaperOptions struct {
	// Clock decides what is due. SystemClock if nil. With a *clock.Manual the
	// reaper also passes whenever the clock is moved.
	Clock clock.Clock
	// Logger receives a debug entry per batch that deleted documents, and
	// store errors. No logging if nil.
	Logger *zap.Logger
	// BatchSize is the most documents one ReapBatch may delete: 256 if zero.
	BatchSize int
	// MaxSleep is the longest real time between passes, and the delay
	// before retrying after a store error: 1s if zero.
	MaxSleep time.Duration
	// Busy, if set, reports whether foreground requests are being served.
	// While they are, a pass works at most a third of the time: after each
	// batch it pauses busyRest times as long as the batch took, so that a
	// wave of expired documents leaves CPU and the store to the requests.
	// Otherwise it pauses only after a streak (streakLimit).
	Busy func() bool
}

const (
	defaultBatchSize = 256
	defaultMaxSleep  = time.Second

	// A pass that has run batches for streakLimit without a break pauses
	// for streakPause, so that a large backlog of expired documents leaves
	// the CPUs and the store to background work now and then; while
	// foreground requests are served it yields more (ReaperOptions.Busy).
	streakLimit = 20 * time.Millisecond
	streakPause = 2 * time.Millisecond

	// busyRest is how many times a batch's duration a pass rests after it
	// while foreground requests are served. The purge costs them more
	// than its own CPU: the deletions it writes are compacted later, at
	// about four fifths of what they cost to write. With a rest as long
	// as the batch, lethe-load's TTL workload (1M due documents, 16
	// clients reading on 2 cores) saw findOne's p99 at 1.5-1.7x its idle
	// figure; with twice as long, 1.3-1.4x at 52,000-67,000 purges a
	// second.
	busyRest = 2
)

// A Reaper purges expired documents in the background: it runs passes of
// bounded batches against its Store, then sleeps until the next known due
// time, at most MaxSleep.
type Reaper struct {
	store     Store
	clock     clock.Clock
	manual    *clock.Manual // clock, when it is one: its moves wake the reaper
	log       *zap.Logger
	batchSize int
	maxSleep  time.Duration
	busy      func() bool
	// yield waits between batches: time.Sleep, or a recorder in tests.
	yield func(time.Duration)

	// passMu keeps Pass from reaping alongside Run: two passes would only
	// contend for the same documents.
	passMu sync.Mutex

	// wakeBefore is the due time, in unix ms, the sleeping Run waits for;
	// a Wake for an earlier time must reach it. It is math.MaxInt64 while
	// Run is not sleeping, so that a Wake during a pass is remembered: the
	// pass may already have read past the write that caused it.
	wakeBefore atomic.Int64
	// earliestWake is the earliest due time, in unix ms, given to Wake
	// and not yet taken by Run; math.MaxInt64 if none.
	earliestWake atomic.Int64
	// wake tells Run that earliestWake has moved. Its capacity of one
	// coalesces signals that Run has not taken yet.
	wake chan struct{}

	passes, subPasses, deleted atomic.Int64
}

// NewReaper returns a reaper over store. It reaps nothing until Run or Pass
// is called.
func NewReaper(store Store, opts ReaperOptions) *Reaper {
	r := &Reaper{
		store:     store,
		clock:     opts.Clock,
		log:       opts.Logger,
		batchSize: opts.BatchSize,
		maxSleep:  opts.MaxSleep,
		busy:      opts.Busy,
		yield:     time.Sleep,
		wake:      make(chan struct{}, 1),
	}
	if r.clock == nil {
		r.clock = clock.System{}
	}
	r.manual, _ = r.clock.(*clock.Manual)
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if r.batchSize <= 0 {
		r.batchSize = defaultBatchSize
	}
	if r.maxSleep <= 0 {
		r.maxSleep = defaultMaxSleep
	}
	r.wakeBefore.Store(math.MaxInt64)
	r.earliestWake.Store(math.MaxInt64)
	return r
}

// Run reaps until ctx is done. Only one Run may be active at a time.
func (r *Reaper) Run(ctx context.Context) {
	for ctx.Err() == nil {
		r.wakeBefore.Store(math.MaxInt64)
		// Writes whose Wake came before this point are visible to the pass.
		r.earliestWake.Store(math.MaxInt64)
		select {
		case <-r.wake:
		default:
		}
		// Taken before the pass, so that a move during it still counts.
		moved := r.clockMoved()

		next, _, err := r.pass(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.log.Error("ttl: reaping failed, will retry", zap.Error(err), zap.Duration("retryIn", r.maxSleep))
			if !r.pause(ctx, r.maxSleep) {
				return
			}
		default:
			if !r.sleep(ctx, next, moved) {
				return
			}
		}
	}
}

// Wake tells the reaper that a write created an expiry due at due. If that
// is earlier than the time the reaper sleeps until, it wakes in time for
// it. Wake never blocks, and is cheap when the reaper already wakes early
// enough.
func (r *Reaper) Wake(due time.Time) {
	ms := unixMilliCeil(due)
	if ms >= r.wakeBefore.Load() {
		return
	}
	for {
		cur := r.earliestWake.Load()
		if ms >= cur || r.earliestWake.CompareAndSwap(cur, ms) {
			break
		}
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Pass runs one pass now, batch after batch until nothing more is due, and
// returns how many documents it deleted. It waits for a pass of Run that is
// under way to finish first.
func (r *Reaper) Pass() (deleted int, err error) {
	_, deleted, err = r.pass(context.Background())
	return deleted, err
}

// pass runs batches until the store has nothing more due. It returns the
// next due time the last batch reported and how many documents it deleted.
func (r *Reaper) pass(ctx context.Context) (time.Time, int, error) {
	r.passMu.Lock()
	defer r.passMu.Unlock()
	r.passes.Add(1)
	deleted := 0
	streakStart := time.Now()
	for {
		start := time.Now()
		n, more, next, err := r.store.ReapBatch(ctx, r.clock.Now(), r.batchSize)
		r.subPasses.Add(1)
		r.deleted.Add(int64(n))
		deleted += n
		if n > 0 {
			r.log.Debug("ttl: deleted expired documents",
				zap.Int("count", n), zap.Duration("duration", time.Since(start)))
		}
		if err != nil {
			return time.Time{}, deleted, fmt.Errorf("ttlindex: reap batch: %w", err)
		}
		// A batch that deleted nothing made no progress: asking again at
		// once would spin. The next pass comes within maxSleep.
		if !more || n == 0 {
			return next, deleted, nil
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, deleted, err
		}
		runtime.Gosched()
		switch {
		case r.busy != nil && r.busy():
			r.yield(busyRest * time.Since(start))
			streakStart = time.Now()
		case time.Since(streakStart) >= streakLimit:
			r.yield(streakPause)
			streakStart = time.Now()
		}
	}
}

// sleep waits for the earliest of: due (none if zero), a Wake for an earlier
// time, moved, and maxSleep of real time. It reports false if ctx was done
// first.
func (r *Reaper) sleep(ctx context.Context, due time.Time, moved <-chan struct{}) bool {
	limit := time.NewTimer(r.maxSleep)
	defer limit.Stop()
	dueTimer := time.NewTimer(time.Duration(math.MaxInt64)) // rearmed below
	defer dueTimer.Stop()
	dueMs := int64(math.MaxInt64)
	if !due.IsZero() {
		dueMs = unixMilliCeil(due)
	}
	for {
		now := r.clock.Now()
		dueMs = min(dueMs, r.earliestWake.Swap(math.MaxInt64))
		if dueMs != math.MaxInt64 && !now.Before(time.UnixMilli(dueMs)) {
			return true
		}
		r.wakeBefore.Store(dueMs)

		// A manual clock moves only by hand, so real time says nothing
		// about when its due times arrive.
		var dueC <-chan time.Time
		if r.manual == nil && dueMs != math.MaxInt64 {
			dueTimer.Reset(time.UnixMilli(dueMs).Sub(now))
			dueC = dueTimer.C
		}
		select {
		case <-ctx.Done():
			return false
		case <-limit.C:
			return true
		case <-moved:
			// Whatever became due, or stopped being due, a moved clock
			// deserves a pass: tests rely on a prompt purge after a move.
			return true
		case <-dueC:
		case <-r.wake:
		}
	}
}

// clockMoved returns a channel closed at the next move of a manual clock,
// and nil, which never fires, for other clocks.
func (r *Reaper) clockMoved() <-chan struct{} {
	if r.manual == nil {
		return nil
	}
	return r.manual.Changed()
}

// pause waits for d of real time, and reports false if ctx was done first.
func (r *Reaper) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// unixMilliCeil returns t in unix ms, rounded up so that waking at the
// result is never early.
func unixMilliCeil(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}
