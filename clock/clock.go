package clock

import (
	"sync"
	"time"
)

// Clock is the time source for expiry. The server reads it for every _ts it
// stamps and every visibility check, so tests and --clock=manual can move
// time without waiting for it.
type Clock interface {
	Now() time.Time
}

// System is the wall clock.
type System struct{}

// Now returns the current wall-clock time.
func (System) Now() time.Time { return time.Now() }

// Manual moves only when told to. Waiters learn of each move through
// Changed, so a reaper sleeping on real time wakes as soon as time jumps.
type Manual struct {
	mu      sync.Mutex
	now     time.Time
	changed chan struct{}
}

// NewManual returns a clock that reads start until moved.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d (which may be negative) and returns the new time.
func (c *Manual) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.notifyLocked()
	return c.now
}

// Set moves the clock to t.
func (c *Manual) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.notifyLocked()
}

// Changed returns a channel that is closed the next time the clock moves.
func (c *Manual) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *Manual) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}
