package main

import (
	"context"
	"sync"
	"time"
)

// An op is one timed request. It returns an error only for a failure that
// makes the measurement worthless; expected outcomes are checked inside.
type op func(ctx context.Context) error

// sample is what one measured run of concurrent clients produced.
type sample struct {
	ops     uint64
	elapsed time.Duration
	latency *histogram
}

func (s sample) opsPerSec() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ops) / s.elapsed.Seconds()
}

// measureFor runs clients concurrent loops of their op for d.
func measureFor(ctx context.Context, clients int, d time.Duration, newOp func(client int) op) (sample, error) {
	window, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return measureUntil(ctx, clients, window.Done(), newOp)
}

// measureUntil runs clients concurrent loops of their op until stop is
// closed and returns the merged latencies. Each client gets its own op from
// newOp so that per-client state (a random source, a key counter) needs no
// lock. The first failing op stops every client and is the returned error.
func measureUntil(ctx context.Context, clients int, stop <-chan struct{}, newOp func(client int) op) (sample, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	hists := make([]*histogram, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		h := newHistogram()
		hists[c] = h
		do := newOp(c)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				began := time.Now()
				if err := do(ctx); err != nil {
					cancel(err)
					return
				}
				h.record(time.Since(began))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return sample{}, err
	}

	all := newHistogram()
	for _, h := range hists {
		all.merge(h)
	}
	return sample{ops: all.count(), elapsed: elapsed, latency: all}, nil
}
