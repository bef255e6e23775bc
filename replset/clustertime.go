package replset

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/oplog"
)

// ClusterClock is the source of the cluster time a replica-set member
// reports in $clusterTime and operationTime: a BSON Timestamp, seconds and
// an increment, that never goes back and moves forward with every write.
//
// With the oplog on it is OplogClock, the time of the newest entry;
// without, TickClock.
type ClusterClock interface {
	// Now is the latest cluster time: that of the last write.
	Now() bson.Timestamp
	// Tick advances the cluster time past every time Now or Tick has
	// returned and returns the new time.
	Tick() bson.Timestamp
	// Await returns once Now is at or past ts, or with ctx's error.
	Await(ctx context.Context, ts bson.Timestamp) error
}

// TickClock is the cluster clock of a member without an oplog (--oplog
// off): the server clock's seconds, and a counter within a second.
type TickClock struct {
	wall clock.Clock

	mu   sync.Mutex
	last bson.Timestamp
	// moved is closed, and replaced, whenever last moves.
	moved chan struct{}
}

// NewTickClock starts a TickClock on wall at a first tick.
func NewTickClock(wall clock.Clock) *TickClock {
	c := &TickClock{wall: wall, moved: make(chan struct{})}
	// A new primary writes a first entry in its term; its time is the
	// cluster time before any client write.
	c.Tick()
	return c
}

// Now is the latest cluster time (ClusterClock).
func (c *TickClock) Now() bson.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Tick advances the cluster time (ClusterClock).
func (c *TickClock) Tick() bson.Timestamp {
	secs := uint32(c.wall.Now().Unix())
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tickLocked(secs)
}

func (c *TickClock) tickLocked(secs uint32) bson.Timestamp {
	if secs > c.last.T {
		c.last = bson.Timestamp{T: secs, I: 1}
	} else {
		c.last.I++
		if c.last.I == 0 { // 2^32 writes in one second: borrow the next
			c.last.T++
			c.last.I = 1
		}
	}
	close(c.moved)
	c.moved = make(chan struct{})
	return c.last
}

// Await waits for writes to move the cluster time to ts. A time of a past
// second is reached at once, by a tick, as a MongoDB primary writes a no-op
// to reach a cluster time it has not: a client can hold such a time from
// before a restart, and must not wait for a write that may never come.
func (c *TickClock) Await(ctx context.Context, ts bson.Timestamp) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		secs := uint32(c.wall.Now().Unix())
		c.mu.Lock()
		if c.last.Before(ts) && secs > ts.T {
			c.tickLocked(secs)
		}
		reached := !c.last.Before(ts)
		moved := c.moved
		c.mu.Unlock()
		if reached {
			return nil
		}
		// Look again when the second may have passed.
		if timer == nil {
			timer = time.NewTimer(time.Second)
		} else {
			timer.Reset(time.Second)
		}
		select {
		case <-moved:
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// OplogClock is the cluster clock of a member whose store keeps an oplog:
// the cluster time is that of the newest entry, so that operationTime is
// the time of the write's own entry and afterClusterTime waits for entries
// to become readable.
type OplogClock struct {
	Engine *engine.Engine
	Wall   clock.Clock
}

// Now is the time of the newest oplog entry (ClusterClock).
func (c OplogClock) Now() bson.Timestamp {
	t := c.Engine.ClusterTime()
	return bson.Timestamp{T: t.T, I: t.I}
}

// Tick is Now: a write that logged anything moved the time itself, and one
// that logged nothing leaves it where it was, as in MongoDB.
func (c OplogClock) Tick() bson.Timestamp { return c.Now() }

// Await waits until the entry at ts, and every one before it, is readable.
// A time of a past second that no entry reached is reached by a no-op
// entry, as a MongoDB primary writes one; on a store shared with other
// servers, by the visible point, which follows the store's oracle.
func (c OplogClock) Await(ctx context.Context, ts bson.Timestamp) error {
	want := oplog.Timestamp{T: ts.T, I: ts.I}
	log := c.Engine.Oplog()
	if !log.Visible().Less(want) {
		return nil
	}
	// A shared log's visible point moves with the store's oracle, past
	// any time a client can hold, without a write (oplog.Log.Share).
	if !log.Shared() && c.Engine.ClusterTime().Less(want) && uint32(c.Wall.Now().Unix()) > ts.T {
		if _, err := c.Engine.AppendNoop(ctx, bson.D{{Key: "msg", Value: "reach the cluster time a client asked for"}}); err != nil {
			return err
		}
	}
	_, err := log.Wait(ctx, want.Prev())
	return err
}
