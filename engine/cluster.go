package engine

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/members"
)

// ClusterOptions configure a server's membership among the servers that
// share one sharded store (package engine/members).
type ClusterOptions struct {
	// Advertise is the address clients reach this server at, published on
	// the roster; SetAdvertise changes it once the listener is up.
	Advertise string
	// Lease is how long the server's roster record holds without a
	// renewal; members.DefaultLease if zero.
	Lease time.Duration
	// Now is the store's shared time, by which leases are judged; the
	// system clock if nil, never the engine's: a test's manual clock
	// jumps by more than a lease, and the server would find its own
	// lease run out (Member.Valid) and refuse its writes.
	Now func() time.Time
}

// cluster is an engine's membership on a shared store.
type cluster struct {
	member *members.Member // nil when the store is not shared
	now    func() time.Time
	stop   context.CancelFunc
	done   chan struct{}
	// oplogDone is closed when the shared oplog's floor stops being
	// published (shareOplog).
	oplogDone chan struct{}
}

// joinCluster puts the server on the store's roster and keeps its lease.
func (e *Engine) joinCluster(o ClusterOptions) error {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	m, err := members.Join(context.Background(), members.Options{Store: e.store, Now: now, Addr: o.Advertise, Lease: o.Lease, Logger: e.log})
	if err != nil {
		return fmt.Errorf("engine: join the servers on the store: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cluster = cluster{member: m, now: now, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(e.cluster.done)
		m.Run(ctx)
	}()
	e.cluster.oplogDone = e.shareOplog(ctx)
	return nil
}

// leaveCluster stops renewing the server's lease and takes it off the
// roster, so that the others need not wait it out.
func (e *Engine) leaveCluster() {
	if e.cluster.member == nil {
		return
	}
	e.cluster.stop()
	<-e.cluster.done
	<-e.cluster.oplogDone
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.cluster.member.Leave(ctx); err != nil {
		e.log.Warn("engine: could not leave the roster; the others wait out the lease", zap.Error(err))
	}
}

// Member is this server's place on the roster of the servers sharing the
// store; nil when the store is not shared (pebble).
func (e *Engine) Member() *members.Member { return e.cluster.member }

// SetAdvertise publishes the address clients reach this server at.
func (e *Engine) SetAdvertise(ctx context.Context, addr string) error {
	m := e.cluster.member
	if m == nil {
		return nil
	}
	m.Update(func(r *members.Record) { r.Addr = addr })
	return m.Renew(ctx)
}

// Members reads the live records of the servers sharing the store: this
// one alone when the store is not shared.
func (e *Engine) Members(ctx context.Context) ([]members.Record, error) {
	if e.cluster.member == nil {
		return nil, nil
	}
	return members.Live(ctx, e.store, e.cluster.now())
}
