package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/bucketkv"
	"github.com/lethedb/lethe/engine/reapshare"
	"github.com/lethedb/lethe/engine/record"
)

// The reaper's work on a shared store: the servers divide it by slot under
// leases in the store (package engine/reapshare), and this server's
// reaper scans only the expiry buckets and date TTL indexes of the slots
// it holds. On any other store there is no share and the reaper scans
// everything, as it always has.

// reapShare is this server's part in the division of the reaper's work.
type reapShare struct {
	sharer *reapshare.Sharer
	stop   context.CancelFunc
	done   chan struct{}

	// mu guards what follows: a leaf.
	mu sync.Mutex
	// last is what the reaper's previous batch held: when it changes, the
	// reaping cursors, which remember positions within the buckets held
	// then, start over.
	last []bool
	// halted is set by Halt: the server holds nothing any more and
	// releases nothing either.
	halted bool
}

// startReapShare starts this server's lease rounds, on a shared store.
func (e *Engine) startReapShare() error {
	m := e.cluster.member
	if m == nil {
		return nil
	}
	sharer, err := reapshare.New(reapshare.Options{Store: e.store, Slots: bucketkv.Buckets(e.store), Self: m.ID(), Now: e.cluster.now, Lease: m.Lease()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.share = &reapShare{sharer: sharer, stop: cancel, done: make(chan struct{})}
	// The first round is the opening's, so that a server that comes
	// first, or alone, reaps from its first pass; a failed one is retried
	// by the loop.
	if err := e.reapShareRound(ctx); err != nil {
		e.log.Warn("ttl: the reaper's first lease round failed; retrying", zap.Error(err))
	}
	go func() {
		defer close(e.share.done)
		e.runReapShare(ctx, m.Lease()/3)
	}()
	return nil
}

// runReapShare runs a lease round every interval until ctx ends, and
// wakes the reaper when it holds slots it did not.
func (e *Engine) runReapShare(ctx context.Context, interval time.Duration) {
	before := e.share.sharer.Held()
	clock.Every(ctx, interval, nil, func(ctx context.Context) {
		if err := e.reapShareRound(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("ttl: the reaper's lease round failed; leases held run out unless renewed", zap.Error(err))
		}
		held := e.share.sharer.Held()
		if gained(before, held) {
			e.reaper.Wake(time.Time{})
		}
		before = held
	})
}

// reapShareRound runs one lease round under the live roster.
func (e *Engine) reapShareRound(ctx context.Context) error {
	recs, err := e.Members(ctx)
	if err != nil {
		return err
	}
	live := make([]string, len(recs))
	for i, r := range recs {
		live[i] = r.ID
	}
	return e.share.sharer.Round(ctx, live)
}

// gained reports whether now holds a slot before did not.
func gained(before, now []bool) bool {
	for i, h := range now {
		if h && (i >= len(before) || !before[i]) {
			return true
		}
	}
	return false
}

// stopReapShare ends the lease rounds and, unless the engine was halted,
// releases the leases held, so that the others take them at once.
func (e *Engine) stopReapShare() {
	if e.share == nil {
		return
	}
	e.share.stop()
	<-e.share.done
	e.share.mu.Lock()
	halted := e.share.halted
	e.share.mu.Unlock()
	if halted {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.share.sharer.Release(ctx); err != nil {
		e.log.Warn("ttl: could not release the reaper's leases; the others wait them out", zap.Error(err))
	}
}

// Halt stops what makes this server a member of the servers sharing its
// store, its roster renewals and its reaper leases, and its reaper, as if
// its process had died, but leaves its records in the store to run out:
// the others take over its work only once they have. The engine still
// answers requests. For tests of take-over; Close must still be called.
// On a store that is not shared it stops the reaper only.
func (e *Engine) Halt() {
	if e.share != nil {
		e.share.mu.Lock()
		e.share.halted = true
		e.share.mu.Unlock()
		e.share.stop()
		<-e.share.done
	}
	if e.cluster.member != nil {
		e.cluster.stop()
		<-e.cluster.done
	}
	if e.stopReaper != nil {
		e.stopReaper()
		<-e.reaperDone
	}
}

// ReapRanges reports how many of the reaper's ranges (slots) this server
// holds and how many there are: shared is false, and the counts zero, on
// a store that is not shared, where the reaper covers everything.
func (e *Engine) ReapRanges() (held, total int, shared bool) {
	if e.share == nil {
		return 0, 0, false
	}
	for _, h := range e.reapSlots() {
		if h {
			held++
		}
	}
	return held, e.share.sharer.Slots(), true
}

// reapSlots is, by slot, whether this server reaps it now.
func (e *Engine) reapSlots() []bool {
	e.share.mu.Lock()
	halted := e.share.halted
	e.share.mu.Unlock()
	if halted {
		return make([]bool, e.share.sharer.Slots())
	}
	return e.share.sharer.Held()
}

// reapScope is what one reaper batch may scan: the whole store, or on a
// shared store the part of the slots this server holds.
type reapScope struct {
	r kv.Reader
	// dateTTL keeps the date TTL indexes of the held slots; nil keeps all.
	dateTTL func(*record.Index) bool
	// none is set when this server holds no slot.
	none bool
}

// reapScope returns the scope of a batch starting now. When the slots held
// changed since the last batch, the collections' reaping cursors start
// over: they remember positions in the buckets held before.
func (e *Engine) reapScope() reapScope {
	if e.share == nil {
		return reapScope{r: e.store}
	}
	held := e.reapSlots()
	e.share.mu.Lock()
	changed := !slices.Equal(held, e.share.last)
	e.share.last = held
	e.share.mu.Unlock()
	if changed {
		for _, c := range e.openCollections() {
			c.reapCursor.Reset()
		}
	}
	if !slices.Contains(held, true) {
		return reapScope{none: true}
	}
	slots := len(held)
	return reapScope{
		r:       bucketkv.Subset(e.store, func(b int) bool { return b < slots && held[b] }),
		dateTTL: func(ix *record.Index) bool { return held[reapshare.SlotOfIndex(ix.Meta.ID, slots)] },
	}
}
