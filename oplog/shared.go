package oplog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Cluster is what a Log shares with the other servers that append to the
// same stored log (Log.Share).
type Cluster interface {
	// Now is a fresh timestamp of the store's oracle, physical
	// milliseconds << 18 | logical (TiKV's TSO): larger than every one
	// handed out, to any server, before the call.
	Now(ctx context.Context) (uint64, error)
	// Publish stores floor as this server's, in a record the others read
	// with Floors: it commits no entry below it. Zero says the server has
	// nothing to commit and publishes again before it has.
	Publish(ctx context.Context, floor Timestamp) error
	// Floors reads the floors the other live servers published, zeros
	// included.
	Floors(ctx context.Context) ([]Timestamp, error)
}

const (
	// tsoLogicalBits is the width of the logical part of an oracle
	// timestamp.
	tsoLogicalBits = 18
	// tsoSlotBits is the width of the slots one oracle timestamp gives:
	// the entries of a batch take consecutive slots, and another oracle
	// timestamp for every tsoSlots of them.
	tsoSlotBits = 4
	tsoSlots    = 1 << tsoSlotBits
)

// FromTSO is the timestamp of slot (below 16) of the oracle timestamp
// tso: T the seconds of its physical time, I its milliseconds within the
// second, its logical part and the slot, so that timestamps order as the
// oracle's do and two oracle timestamps never share one. 999<<22 plus the
// rest stays below 2^32.
func FromTSO(tso uint64, slot uint32) Timestamp {
	physical := tso >> tsoLogicalBits
	logical := uint32(tso & (1<<tsoLogicalBits - 1))
	ms := uint32(physical % 1000)
	return Timestamp{T: uint32(physical / 1000), I: ms<<(tsoLogicalBits+tsoSlotBits) | logical<<tsoSlotBits | slot}
}

// SharedInterval is how often a shared Log publishes its floor while it
// appends and reads the others': the latency, beyond the commit, of an
// entry reaching readers on the other servers.
const SharedInterval = 50 * time.Millisecond

// sharedMinGap is the least time between two refreshes that commits
// wake early, so that a busy server publishes its floor at most one
// round of store calls after another rather than once per commit.
const sharedMinGap = 10 * time.Millisecond

// idleAfter is how long a server appends nothing before it publishes a
// zero floor and stops publishing: its next append then waits for a
// publication, so a steady trickle of writes keeps the server busy. A
// variable for tests.
var idleAfter = time.Second

// shared is the state of a Log shared with other servers.
type shared struct {
	c Cluster
	// pubMu keeps publications one at a time, across their store call, so
	// that the record's last write is the last decision.
	pubMu sync.Mutex
	kick  chan struct{} // capacity 1: an entry finished

	// Under Log.mu:
	// busy is set while the store holds a nonzero floor of this server's:
	// an append may then take a timestamp, which stays above it.
	busy bool
	// published is the floor last published while busy.
	published Timestamp
	// seen is the last slot of the newest oracle timestamp the Log has
	// seen: every later one is after it.
	seen Timestamp
	// lastWork is when the last reservation finished (monotonic time).
	lastWork time.Time
}

// Share makes l one of several logs appended to by servers sharing one
// store, before any append: entries take their timestamps from the
// store's oracle, unique and ordered across servers, and readers see an
// entry only once no live server may still commit one before it (see the
// package doc). RunShared must run while l is open.
func (l *Log) Share(c Cluster) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shared = &shared{c: c, kick: make(chan struct{}, 1)}
	// The newest stored entry is no visible point: another server may
	// still commit one before it. Nothing is visible until RunShared
	// has read the floors.
	l.visible = Timestamp{}
}

// Shared reports whether l is shared with other servers.
func (l *Log) Shared() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shared != nil
}

// appendShared is Append on a shared log.
func (l *Log) appendShared(ctx context.Context, s *shared, b Batch, ents []Entry) (*Reservation, error) {
	r := &Reservation{l: l}
	if err := l.enter(ctx, s, r); err != nil {
		return nil, err
	}
	// The oracle timestamps are taken after the reservation holds the
	// floor down: a floor computed meanwhile counts it.
	tsos, err := s.stamps(ctx, (len(ents)+tsoSlots-1)/tsoSlots)
	if err != nil {
		r.Finish(false)
		return nil, err
	}
	wall := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var key [KeyLen]byte
	buf := make([]byte, 0, 256)
	for i := range ents {
		ts := FromTSO(tsos[i/tsoSlots], uint32(i%tsoSlots))
		if i == 0 {
			r.First = ts
		}
		buf = ents[i].Append(buf[:0], ts, wall)
		if err := b.Set(AppendKey(key[:0], ts), buf); err != nil {
			l.dropLocked(r)
			return nil, fmt.Errorf("oplog: append at %v: %w", ts, err)
		}
		r.bytes += int64(KeyLen + len(buf))
		if ents[i].PreImage != nil {
			pk := AppendPreImageKey(key[:0], ts)
			if err := b.Set(pk, ents[i].PreImage); err != nil {
				l.dropLocked(r)
				return nil, fmt.Errorf("oplog: append pre-image at %v: %w", ts, err)
			}
			r.bytes += int64(len(pk) + len(ents[i].PreImage))
		}
		r.Last = ts
	}
	if l.last.Less(r.Last) {
		l.last = r.Last
	}
	if top := FromTSO(tsos[len(tsos)-1], tsoSlots-1); s.seen.Less(top) {
		s.seen = top
	}
	return r, nil
}

// maxStampCalls bounds the oracle calls one append makes at once.
const maxStampCalls = 16

// stamps takes n oracle timestamps, in increasing order. The calls of a
// large batch run concurrently: the oracle's client sends concurrent
// requests in one round trip.
func (s *shared) stamps(ctx context.Context, n int) ([]uint64, error) {
	out := make([]uint64, n)
	if n == 1 {
		t, err := s.c.Now(ctx)
		if err != nil {
			return nil, fmt.Errorf("oplog: timestamp: %w", err)
		}
		out[0] = t
		return out, nil
	}
	errs := make([]error, n)
	sem := make(chan struct{}, maxStampCalls)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i], errs[i] = s.c.Now(ctx)
			<-sem
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("oplog: timestamps: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// enter registers r among the pending reservations, below every
// timestamp the oracle may hand out from now on, once the store holds a
// floor of this server's.
func (l *Log) enter(ctx context.Context, s *shared, r *Reservation) error {
	for {
		l.mu.Lock()
		if s.busy {
			r.First = s.seen.Next()
			l.pending = append(l.pending, r)
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		if err := l.publishBusy(ctx, s); err != nil {
			return err
		}
	}
}

// publishBusy publishes a floor of a server that had none: readers that
// saw it without one read below their own fresh timestamp only, so every
// timestamp taken after this publication is above what they read.
func (l *Log) publishBusy(ctx context.Context, s *shared) error {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	l.mu.Lock()
	busy := s.busy
	l.mu.Unlock()
	if busy {
		return nil
	}
	floor, err := l.observe(ctx, s)
	if err != nil {
		return err
	}
	if err := s.c.Publish(ctx, floor); err != nil {
		return fmt.Errorf("oplog: publish the floor: %w", err)
	}
	l.mu.Lock()
	// lastWork restarts the idle spell, so that the floor loop does not
	// take back at once what an append is about to use.
	s.busy, s.published, s.lastWork = true, floor, time.Now()
	l.mu.Unlock()
	return nil
}

// observe takes a fresh oracle timestamp and returns the floor of this
// server: the first timestamp of its oldest pending reservation, or the
// fresh one.
func (l *Log) observe(ctx context.Context, s *shared) (Timestamp, error) {
	tso, err := s.c.Now(ctx)
	if err != nil {
		return Timestamp{}, fmt.Errorf("oplog: timestamp: %w", err)
	}
	floor := FromTSO(tso, 0)
	l.mu.Lock()
	defer l.mu.Unlock()
	if top := FromTSO(tso, tsoSlots-1); s.seen.Less(top) {
		s.seen = top
	}
	for _, r := range l.pending {
		if r.First.Less(floor) {
			floor = r.First
		}
	}
	return floor, nil
}

// finishShared is Finish on a shared log: r leaves the pending ones, and
// the next refresh moves the floor.
func (l *Log) finishShared(s *shared, r *Reservation) {
	l.dropLocked(r)
	s.lastWork = time.Now()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// dropLocked takes r off the pending reservations.
func (l *Log) dropLocked(r *Reservation) {
	if i := slices.Index(l.pending, r); i >= 0 {
		l.pending = slices.Delete(l.pending, i, i+1)
	}
	r.done = true
}

// refresh publishes this server's floor and moves the visible point to
// just below the lowest floor of the live servers. Its own floor is taken
// before the others are read: a server that published its first floor
// after that read takes its timestamps after it, above this one.
func (l *Log) refresh(ctx context.Context, s *shared) error {
	floor, err := l.observe(ctx, s)
	if err != nil {
		return err
	}
	if err := l.publishFloor(ctx, s, floor); err != nil {
		return err
	}
	floors, err := s.c.Floors(ctx)
	if err != nil {
		return fmt.Errorf("oplog: read the servers' floors: %w", err)
	}
	visible := floor
	for _, f := range floors {
		if !f.IsZero() && f.Less(visible) {
			visible = f
		}
	}
	visible = visible.Prev()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.visible.Less(visible) {
		return nil
	}
	l.visible = visible
	if l.last.Less(visible) {
		// The cluster time moves with what every server committed.
		l.last = visible
	}
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// publishFloor publishes floor while the server appends, and a zero
// floor once it has been idle for idleAfter.
func (l *Log) publishFloor(ctx context.Context, s *shared, floor Timestamp) error {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	l.mu.Lock()
	if !s.busy {
		l.mu.Unlock()
		return nil
	}
	if len(l.pending) == 0 && time.Since(s.lastWork) > idleAfter {
		// Appends from now on publish first (enter).
		s.busy, s.published = false, Timestamp{}
		l.mu.Unlock()
		if err := s.c.Publish(ctx, Timestamp{}); err != nil {
			// The store keeps the last floor, which holds readers back
			// until the next publication, and no more.
			return fmt.Errorf("oplog: publish no floor: %w", err)
		}
		return nil
	}
	if !s.published.Less(floor) {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	if err := s.c.Publish(ctx, floor); err != nil {
		return fmt.Errorf("oplog: publish the floor: %w", err)
	}
	l.mu.Lock()
	if s.busy && s.published.Less(floor) {
		s.published = floor
	}
	l.mu.Unlock()
	return nil
}

// RunShared keeps a shared log's floor published and its visible point
// moving, every SharedInterval and soon after an entry finishes, until
// ctx is done.
func (l *Log) RunShared(ctx context.Context, log *zap.Logger) {
	l.mu.Lock()
	s := l.shared
	l.mu.Unlock()
	if s == nil {
		return
	}
	t := time.NewTicker(SharedInterval)
	defer t.Stop()
	for {
		start := time.Now()
		if err := l.refresh(ctx, s); err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			log.Warn("oplog: shared visible point", zap.Error(err))
		}
		if gap := sharedMinGap - time.Since(start); gap > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(gap):
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// Start is where a reader that wants what is written from now on starts:
// after every entry of a write acknowledged before the call, on any server.
// That is the visible point on a log of its own; on a shared one, a fresh
// oracle timestamp, which the visible point reaches once every server has
// committed what it may below it.
func (l *Log) Start(ctx context.Context) (Timestamp, error) {
	l.mu.Lock()
	s := l.shared
	visible := l.visible
	l.mu.Unlock()
	if s == nil {
		return visible, nil
	}
	tso, err := s.c.Now(ctx)
	if err != nil {
		return Timestamp{}, fmt.Errorf("oplog: timestamp: %w", err)
	}
	return FromTSO(tso, tsoSlots-1), nil
}
