package server

import "sync/atomic"

// foreground tracks the commands clients run, so that the TTL reaper can
// yield to them (engine Options.Foreground).
type foreground struct {
	// running counts the commands in progress, less hellos waiting for a
	// topology change and getMores waiting for change events: a monitor's
	// hello waits ten seconds at a time, a change stream's getMore a
	// second, for good, and neither is a request to yield to.
	running atomic.Int64
	// started counts the commands ever started, and seen is its value at
	// the last look.
	started, seen atomic.Int64
}

func (f *foreground) begin() {
	f.started.Add(1)
	f.running.Add(1)
}

func (f *foreground) end() { f.running.Add(-1) }

// awaiting takes a command out of the running count while it waits, for a
// topology change or for change events (b), and puts it back when it stops
// waiting.
func (f *foreground) awaiting(b bool) {
	if b {
		f.running.Add(-1)
	} else {
		f.running.Add(1)
	}
}

// busy reports whether a command runs now or has started since the last
// look. A look at the running count alone mostly misses a busy server's
// commands: a request spends most of its round trip in the network and in
// its client, not here. The reaper looks once per batch.
func (f *foreground) busy() bool {
	n := f.started.Load()
	return f.seen.Swap(n) != n || f.running.Load() > 0
}
