package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// Snapshot reads outside transactions (readConcern {level: "snapshot"},
// MongoDB 5.0+): a read at a cluster time sees every commit at or before it
// and none after.
//
// A snapshot is named by the oplog's visible timestamp when it was taken:
// every entry at or before it is committed, so in the snapshot. Pebble keeps
// no versions, so the engine keeps the snapshots it handed out (history)
// for the history window, and a read at one of their times reads the same
// snapshot: the reads of a driver's snapshot session, which all carry the
// atClusterTime of the first, are repeatable. Another time is served only
// when it is the latest commit and none is in flight, where a fresh
// snapshot holds exactly it; any other is SnapshotTooOld. On a store that
// keeps versions (TiKV) every time in the window can be served.

// DefaultSnapshotHistory is how long a snapshot stays readable at its
// cluster time, MongoDB's default minSnapshotHistoryWindowInSeconds.
const DefaultSnapshotHistory = 5 * time.Minute

// maxRetainedSnapshots bounds the snapshots kept: each pins the versions
// of what was overwritten since, so their number and age bound the disk
// they hold.
const maxRetainedSnapshots = 64

type retainedSnapshot struct {
	at        oplog.Timestamp
	snap      kv.Snapshot
	catalogAt uint64
	taken     time.Time
	refs      int  // open reads; guarded by snapshotHistory.mu
	dropped   bool // out of the history; closed when refs drops to 0
}

// snapshotHistory is the snapshots kept by cluster time. Its mu is a leaf
// lock, held only for map and list access and never across a kv call.
type snapshotHistory struct {
	mu     sync.Mutex
	window time.Duration
	byAt   map[oplog.Timestamp]*retainedSnapshot
	order  []*retainedSnapshot // oldest first
}

// acquire returns the kept snapshot at at, if any, with a reference.
func (h *snapshotHistory) acquire(at oplog.Timestamp, now time.Time) *retainedSnapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expireLocked(now)
	r := h.byAt[at]
	if r != nil {
		r.refs++
	}
	return r
}

// add keeps r, referenced once by its caller, unless one at the same time
// is kept already: then that one is returned, referenced, and r closed.
func (h *snapshotHistory) add(r *retainedSnapshot, now time.Time) *retainedSnapshot {
	h.mu.Lock()
	if old := h.byAt[r.at]; old != nil {
		old.refs++
		h.mu.Unlock()
		r.snap.Close()
		return old
	}
	if h.byAt == nil {
		h.byAt = make(map[oplog.Timestamp]*retainedSnapshot)
	}
	r.refs = 1
	h.byAt[r.at] = r
	h.order = append(h.order, r)
	var closing []kv.Snapshot
	for len(h.order) > maxRetainedSnapshots {
		closing = h.dropLocked(closing)
	}
	closing = append(closing, h.expireLocked(now)...)
	h.mu.Unlock()
	for _, s := range closing {
		s.Close()
	}
	return r
}

// dropLocked takes the oldest snapshot out of the history; it returns the
// snapshots to close once no read uses them.
func (h *snapshotHistory) dropLocked(closing []kv.Snapshot) []kv.Snapshot {
	r := h.order[0]
	h.order = h.order[1:]
	delete(h.byAt, r.at)
	r.dropped = true
	if r.refs == 0 {
		closing = append(closing, r.snap)
	}
	return closing
}

func (h *snapshotHistory) expireLocked(now time.Time) []kv.Snapshot {
	var closing []kv.Snapshot
	for len(h.order) > 0 && now.Sub(h.order[0].taken) > h.window {
		closing = h.dropLocked(closing)
	}
	return closing
}

func (h *snapshotHistory) release(r *retainedSnapshot) {
	h.mu.Lock()
	r.refs--
	closeIt := r.refs == 0 && r.dropped
	h.mu.Unlock()
	if closeIt {
		r.snap.Close()
	}
}

// closeAll closes every kept snapshot, at the engine's close.
func (h *snapshotHistory) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.order {
		if r.refs == 0 {
			r.snap.Close()
		}
		r.dropped = true
	}
	h.order, h.byAt = nil, nil
}

// BeginSnapshotRead opens a read at cluster time at, or at the latest
// commit if at is zero, and returns the time it reads at (atClusterTime in
// the reply). Reads made with WithTransaction(ctx, t) read it; t writes
// nothing and must be ended (Abort) when the read's cursor is done.
func (e *Engine) BeginSnapshotRead(ctx context.Context, at oplog.Timestamp) (*Transaction, oplog.Timestamp, error) {
	if e.oplog == nil {
		return nil, oplog.Timestamp{}, mongoerr.New(mongoerr.IllegalOperation, "read concern snapshot needs the oplog (replica-set mode)")
	}
	wall := time.Now()
	if !at.IsZero() {
		if r := e.history.acquire(at, wall); r != nil {
			return e.snapshotTransaction(r), at, nil
		}
		if err := e.waitClusterTime(ctx, at); err != nil {
			return nil, oplog.Timestamp{}, err
		}
	}
	catalogAt := e.catalogSeq.Load()
	before := e.oplog.Visible()
	snap, err := e.store.Snapshot(ctx)
	if err != nil {
		return nil, oplog.Timestamp{}, fmt.Errorf("engine: snapshot read: %w", err)
	}
	// The snapshot holds every entry at or before the visible point read
	// before it; it is exactly at that point only if nothing was handed
	// out after it meanwhile (exactlyAt).
	if !at.IsZero() && (at != before || !e.exactlyAt(before)) {
		snap.Close()
		return nil, oplog.Timestamp{}, errSnapshotTooOld(at)
	}
	r := e.history.add(&retainedSnapshot{at: before, snap: snap, catalogAt: catalogAt, taken: wall}, wall)
	return e.snapshotTransaction(r), r.at, nil
}

func (e *Engine) snapshotTransaction(r *retainedSnapshot) *Transaction {
	return &Transaction{e: e, snap: r, start: e.clock.Now(), catalogAt: r.catalogAt,
		states: make(map[*Collection]*collState), written: make(map[*Collection]bool)}
}

// SetSnapshotHistory sets how long snapshots stay readable at their
// cluster time (minSnapshotHistoryWindowInSeconds).
func (e *Engine) SetSnapshotHistory(d time.Duration) {
	e.history.mu.Lock()
	defer e.history.mu.Unlock()
	e.history.window = d
}

// waitClusterTime refuses a read time after the cluster time, as mongod
// does, and waits until every entry up to it is visible.
func (e *Engine) waitClusterTime(ctx context.Context, at oplog.Timestamp) error {
	if e.oplog == nil {
		return mongoerr.New(mongoerr.IllegalOperation, "atClusterTime needs the oplog (replica-set mode)")
	}
	if last := e.oplog.Last(); last.Less(at) {
		return mongoerr.New(mongoerr.InvalidOptions, "readConcern atClusterTime value must not be greater than the current clusterTime. Requested clusterTime: %v; current clusterTime: %v", at, last)
	}
	_, err := e.oplog.Wait(ctx, at.Prev())
	return err
}

// exactlyAt reports whether a snapshot taken just before holds exactly the
// commits up to at: at is the latest timestamp handed out, and visible.
func (e *Engine) exactlyAt(at oplog.Timestamp) bool {
	return e.oplog.Last() == at && e.oplog.Visible() == at
}

func errSnapshotTooOld(at oplog.Timestamp) error {
	return mongoerr.New(mongoerr.SnapshotTooOld, "Read timestamp %v is older than the oldest available timestamp.", at)
}
