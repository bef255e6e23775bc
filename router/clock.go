package router

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// MaxDrift is how far past the wall clock a cluster time brought by a
// client may be: mongod's and mongos's maxAcceptableLogicalClockDriftSecs
// default, a year. A time beyond is refused, so that a made-up time cannot
// carry every later operationTime of the server with it.
const MaxDrift = 365 * 24 * time.Hour

// ClusterClock is a server's own cluster time (replset.ClusterClock: the
// oplog's, or ticks without one).
type ClusterClock interface {
	// Now is the latest cluster time: that of the last write.
	Now() bson.Timestamp
	// Tick advances the cluster time past every time Now or Tick has
	// returned and returns the new time.
	Tick() bson.Timestamp
	// Await returns once Now is at or past ts, or with ctx's error.
	Await(ctx context.Context, ts bson.Timestamp) error
}

// Clock is the cluster time of a server among several on one store: its
// own (Local), and past it the highest time a client brought in
// afterClusterTime from another server, as a mongos's clock moves to the
// times it is sent.
//
// A time ahead of this server's own came from another server: every write
// there that a client saw acknowledged before sending it is committed in
// the shared store, which serves each read from a snapshot taken when the
// read starts, so the read sees those writes without waiting. A time this
// server has handed out waits, as on one server, for its own writes below
// it to commit (Local.Await). So a causally consistent session reads its
// writes on any server and never waits for a time another server's clock
// set, which this one might not reach for a long while.
type Clock struct {
	Local ClusterClock
	// Wall is the server's clock, which bounds the times accepted.
	Wall func() time.Time

	mu   sync.Mutex
	seen bson.Timestamp // highest time brought from another server
}

// NewClock returns the cluster clock of a server whose own is local and
// whose wall clock is wall.
func NewClock(local ClusterClock, wall func() time.Time) *Clock {
	return &Clock{Local: local, Wall: wall}
}

// Now is the later of the server's own time and the highest brought from
// another server, so that operationTime never goes back for a client that
// moves between servers.
func (c *Clock) Now() bson.Timestamp { return c.later(c.Local.Now()) }

// Tick advances the server's own time and returns it, or the highest time
// brought from another server if that is later.
func (c *Clock) Tick() bson.Timestamp { return c.later(c.Local.Tick()) }

func (c *Clock) later(own bson.Timestamp) bson.Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	if own.Before(c.seen) {
		return c.seen
	}
	return own
}

// Await returns at once for a time ahead of the server's own (see Clock),
// remembering it; for an earlier one, it waits as Local does. A time more
// than MaxDrift past the wall clock fails with ClusterTimeFailsRateLimiter,
// as mongod's and mongos's clocks refuse it (VectorClock's rate limiter).
func (c *Clock) Await(ctx context.Context, ts bson.Timestamp) error {
	if own := c.Local.Now(); own.Before(ts) {
		wall := c.Wall().Unix()
		if int64(ts.T) > wall+int64(MaxDrift/time.Second) {
			return mongoerr.New(mongoerr.ClusterTimeFailsRateLimiter,
				"New cluster time, %d, is too far from this node's wall clock time, %d.", ts.T, wall)
		}
		c.mu.Lock()
		if c.seen.Before(ts) {
			c.seen = ts
		}
		c.mu.Unlock()
		return nil
	}
	return c.Local.Await(ctx, ts)
}
