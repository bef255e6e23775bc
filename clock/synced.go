package clock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Source reads a reference time that several processes share, such as the
// physical part of a distributed store's timestamp oracle. A read may take
// a network round trip.
type Source func(ctx context.Context) (time.Time, error)

// Synced follows a shared Source without asking it on every read: it keeps
// the Source's offset from the local clock, measured at each sync, and adds
// it to the local time. Front-ends over one store then decide expiry by the
// same time, to within the Source's round trip and the drift between syncs,
// while Now stays as cheap as the wall clock. Now never goes backwards,
// even when a sync lowers the offset.
type Synced struct {
	source Source
	offset atomic.Int64 // nanoseconds to add to the local time
	last   atomic.Int64 // the latest time Now returned, unix nanoseconds
}

// NewSynced returns a clock synced once with source, or the error of that
// first read.
func NewSynced(ctx context.Context, source Source) (*Synced, error) {
	c := &Synced{source: source}
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Sync measures the offset again. The Source's time is taken to be the
// local time half-way through its read.
func (c *Synced) Sync(ctx context.Context) error {
	before := time.Now()
	ref, err := c.source(ctx)
	if err != nil {
		return fmt.Errorf("clock: read the shared time: %w", err)
	}
	after := time.Now()
	mid := before.Add(after.Sub(before) / 2)
	c.offset.Store(int64(ref.Sub(mid)))
	return nil
}

// Run syncs every interval until ctx is done. A failed sync keeps the last
// offset: the local clock drifts slowly, and the next sync corrects it.
func (c *Synced) Run(ctx context.Context, every time.Duration, failed func(error)) {
	Every(ctx, every, nil, func(ctx context.Context) {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil && failed != nil {
			failed(err)
		}
	})
}

// Now returns the local time plus the shared offset, never earlier than a
// time it returned before.
func (c *Synced) Now() time.Time {
	now := time.Now().UnixNano() + c.offset.Load()
	for {
		last := c.last.Load()
		if now <= last {
			return time.Unix(0, last)
		}
		if c.last.CompareAndSwap(last, now) {
			return time.Unix(0, now)
		}
	}
}
