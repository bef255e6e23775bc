package oplog

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Batch is the pending write an entry is appended to: the engine's batch of
// the write it describes.
type Batch interface {
	Set(key, value []byte) error
}

// Options configure a Log.
type Options struct {
	// Now is the wall clock of entries and of the seconds of timestamps.
	Now func() time.Time
	// MaxBytes bounds the stored entries: the trimmer removes the oldest
	// while they hold more. No bound if zero or negative.
	MaxBytes int64
	// MaxAge bounds how long an entry is kept. No bound if zero.
	MaxAge time.Duration
}

// Log hands out timestamps, appends entries to batches and tracks which
// entries readers may see. It is safe for concurrent use.
type Log struct {
	now    func() time.Time
	max    int64
	maxAge time.Duration

	mu      sync.Mutex
	last    Timestamp      // last timestamp handed out
	pending []*Reservation // unfinished reservations, in timestamp order
	visible Timestamp
	changed chan struct{} // closed, and replaced, when visible moves
	size    int64         // bytes of the committed entries
	// floor is the oldest entry a trim kept (zero before the first trim
	// or SetFloor): every entry before it is gone, so readers start
	// there rather than walk over what the trims deleted, which the store
	// keeps as tombstones until compactions drop them.
	floor Timestamp

	trim chan struct{} // capacity 1: the size passed the bound
	// shared is set when other servers append to the same stored log
	// (Share); pending is then in no order, and visible moves only by
	// RunShared.
	shared *shared
	// trimMu keeps trims one at a time: two would count the same
	// entries as removed.
	trimMu sync.Mutex
}

// New returns a Log whose stored entries end at last (zero if there are
// none) and hold size bytes.
func New(opts Options, last Timestamp, size int64) *Log {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Log{now: opts.Now, max: opts.MaxBytes, maxAge: opts.MaxAge, last: last, visible: last,
		changed: make(chan struct{}), size: size, trim: make(chan struct{}, 1)}
	if l.max > 0 && size > l.max {
		// Over the bound already (it was lowered): trim at once.
		l.trim <- struct{}{}
	}
	return l
}

// Floor is the timestamp before which no entry is stored any more: the
// oldest kept by the latest trim, or given to SetFloor.
func (l *Log) Floor() Timestamp {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.floor
}

// SetFloor raises the floor to ts, the oldest stored entry when the log
// opens.
func (l *Log) SetFloor(ts Timestamp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.floor.Less(ts) {
		l.floor = ts
	}
}

// Reservation is the timestamps of entries appended to one batch.
type Reservation struct {
	l           *Log
	First, Last Timestamp
	bytes       int64
	done        bool
}

// Append gives ents consecutive timestamps after every earlier one and sets
// them in b. The caller commits b, then calls Finish, whatever the outcome.
// The timestamps stay invisible to readers until then, and so do those of
// every later reservation.
func (l *Log) Append(b Batch, ents []Entry) (*Reservation, error) {
	return l.AppendContext(context.Background(), b, ents)
}

// AppendContext is Append with a context for the store calls of a shared
// log (Share), which takes its timestamps from the store's oracle.
func (l *Log) AppendContext(ctx context.Context, b Batch, ents []Entry) (*Reservation, error) {
	if len(ents) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	s := l.shared
	l.mu.Unlock()
	if s != nil {
		return l.appendShared(ctx, s, b, ents)
	}
	wall := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := nextAfter(l.last, wall, len(ents))
	r := &Reservation{l: l, First: ts}
	var key [KeyLen]byte
	buf := make([]byte, 0, 256)
	for i := range ents {
		buf = ents[i].Append(buf[:0], ts, wall)
		if err := b.Set(AppendKey(key[:0], ts), buf); err != nil {
			return nil, fmt.Errorf("oplog: append at %v: %w", ts, err)
		}
		r.bytes += int64(KeyLen + len(buf))
		if ents[i].PreImage != nil {
			// Counted in the log's size, unlike mongod's oplogSize and
			// config.system.preimages: a small update of a large
			// document writes a small entry and a large pre-image, and
			// the size bound is what keeps the disk bounded.
			pk := AppendPreImageKey(key[:0], ts)
			if err := b.Set(pk, ents[i].PreImage); err != nil {
				return nil, fmt.Errorf("oplog: append pre-image at %v: %w", ts, err)
			}
			r.bytes += int64(len(pk) + len(ents[i].PreImage))
		}
		r.Last = ts
		ts = ts.Next()
	}
	l.last = r.Last
	l.pending = append(l.pending, r)
	return r, nil
}

// Finish records that the batch of r committed or failed; on failure its
// timestamps are holes that readers skip.
func (r *Reservation) Finish(committed bool) {
	if r == nil {
		return
	}
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	if committed {
		l.size += r.bytes
		if l.max > 0 && l.size > l.max {
			select {
			case l.trim <- struct{}{}:
			default:
			}
		}
	}
	if l.shared != nil {
		l.finishShared(l.shared, r)
		return
	}
	n := 0
	for n < len(l.pending) && l.pending[n].done {
		l.visible = l.pending[n].Last
		n++
	}
	if n == 0 {
		return
	}
	clear(l.pending[:n])
	l.pending = l.pending[n:]
	close(l.changed)
	l.changed = make(chan struct{})
}

// Visible is the timestamp up to which every entry has committed: readers
// read no further.
func (l *Log) Visible() Timestamp {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.visible
}

// Last is the last timestamp handed out, the cluster time of the node.
func (l *Log) Last() Timestamp {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Watch returns the visible timestamp and a channel closed when it moves.
func (l *Log) Watch() (Timestamp, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.visible, l.changed
}

// Wait blocks until the visible timestamp is after ts, and returns it; or
// until ctx is done.
func (l *Log) Wait(ctx context.Context, ts Timestamp) (Timestamp, error) {
	for {
		v, ch := l.Watch()
		if ts.Less(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}

// Size is the bytes held by committed entries, as far as the Log knows.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}
