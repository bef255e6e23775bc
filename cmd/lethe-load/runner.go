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
	// cpu is the server's CPU time (user and system) over the sample,
	// when it was measured (see cpuClock); 0 otherwise.
	cpu time.Duration
}

// cpuPerOp is the server's CPU time per operation, 0 when not measured.
func (s sample) cpuPerOp() time.Duration {
	if s.cpu <= 0 || s.ops == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.ops)
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
	total, _, err := measureKinds(ctx, clients, stop, 1, func(client int) kindOp {
		do := newOp(client)
		return func(ctx context.Context) (int, error) { return 0, do(ctx) }
	})
	return total, err
}

// A kindOp is one timed request of a mix of kinds (a YCSB mix's read,
// update, scan...): it returns the kind of request it made, so that each
// kind gets its own latencies, or noMoreOps when its client has nothing
// left to do (a load of a fixed number of records).
type kindOp func(ctx context.Context) (kind int, err error)

// noMoreOps is what a kindOp returns to end its client's loop; the call
// is not counted.
const noMoreOps = -1

// measureKinds is measureUntil for ops of kinds kinds: it returns the
// merged sample of all of them and one per kind, all over the same
// elapsed time, so that each kind's ops/s is its share of the mix's.
func measureKinds(ctx context.Context, clients int, stop <-chan struct{}, kinds int, newOp func(client int) kindOp) (sample, []sample, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	hists := make([][]*histogram, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		hs := make([]*histogram, kinds)
		for k := range hs {
			hs[k] = newHistogram()
		}
		hists[c] = hs
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
				kind, err := do(ctx)
				if err != nil {
					cancel(err)
					return
				}
				if kind == noMoreOps {
					return
				}
				hs[kind].record(time.Since(began))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return sample{}, nil, err
	}

	all := newHistogram()
	byKind := make([]sample, kinds)
	for k := range byKind {
		h := newHistogram()
		for _, hs := range hists {
			h.merge(hs[k])
		}
		all.merge(h)
		byKind[k] = sample{ops: h.count(), elapsed: elapsed, latency: h}
	}
	return sample{ops: all.count(), elapsed: elapsed, latency: all}, byKind, nil
}
