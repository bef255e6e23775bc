package clock

import (
	"context"
	"time"
)

// Every calls fn every d until ctx ends, and also at once whenever kick
// (nil: never) delivers. The calls run on the caller's goroutine, one at a
// time: the background loops of a server (lease renewals, catalog polls,
// reclaims, syncs) share this shape.
func Every(ctx context.Context, d time.Duration, kick <-chan struct{}, fn func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		fn(ctx)
	}
}
