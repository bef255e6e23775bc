package changestream

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// Source is what a stream reads: the engine's oplog and documents.
type Source interface {
	// ReadOplog calls fn with each visible entry after ts, in order.
	ReadOplog(ctx context.Context, after oplog.Timestamp, fn func(oplog.Timestamp, bson.Raw) (bool, error)) (oplog.Timestamp, error)
	// OldestOplog is the oldest stored entry's timestamp, zero if none.
	OldestOplog() (oplog.Timestamp, error)
	// Watch returns the visible timestamp and a channel closed when it
	// moves.
	Watch() (oplog.Timestamp, <-chan struct{})
	// FindByID returns the current document of db.coll with _id id, nil
	// if none.
	FindByID(ctx context.Context, db, coll string, id bsoncore.Value) (bson.Raw, error)
	// PreImage returns the pre-image stored with the entry at ts, nil if
	// none.
	PreImage(ts oplog.Timestamp) (bson.Raw, error)
	// Clock returns the server clock's time and a channel closed when it
	// moves by hand (a manual clock); nil, which never fires, otherwise.
	Clock() (time.Time, <-chan struct{})
	// Expiring returns the documents of the namespaces watch accepts
	// whose expiry instant falls in (fromMs, toMs], ordered by instant,
	// namespace and _id.
	Expiring(fromMs, toMs int64, watch func(db, coll string) bool) ([]Expired, error)
}

// Starter is offered by a Source whose acknowledged writes may be past its
// visible point (servers sharing a store, oplog.Log.Start): a stream
// opened with no start point starts at Start rather than at the visible
// point, so that it reports none of the writes acknowledged before it
// opened, as a stream opened at the cluster time does.
type Starter interface {
	Start() (oplog.Timestamp, error)
}

// Expired is a document that expires in a window: what an expire event
// reports.
type Expired struct {
	DB, Coll string
	ID       bsoncore.Value
	Key      []byte // the _id in index-key form, ordering ties
	At       int64  // the expiry instant, Unix milliseconds
}

// readAhead bounds the events one read turns out when the batch size sets
// no bound.
const readAhead = 1000

// Stream is an open change stream: its position in the oplog and the
// events read but not yet handed out.
type Stream struct {
	spec *Spec
	src  Source
	// Post runs the stages that follow $changeStream over a batch of
	// events; nil if there are none.
	Post func(ctx context.Context, events []bson.Raw) ([]bson.Raw, error)
	// Waiting, if set, hears when Next starts (true) and stops (false)
	// waiting for events: a server that yields its background work to
	// the commands it runs does not count a getMore that only waits.
	Waiting func(waiting bool)

	after   oplog.Timestamp // entries up to here have been read
	check   *Token          // the event a resume must find first
	pending []event
	last    Token // the last event handed out, or the start point
	done    bool  // an invalidate was handed out
	// expW and expTail are the expiry position with showExpireEvents:
	// expire events up to (expW, expTail) have been read.
	expW    int64
	expTail []byte
	// maxBacklog bounds the events one read with showExpireEvents may
	// gather (see readWithExpiry); MaxExpireBacklog unless a test says.
	maxBacklog int
}

// Open starts a stream at the point spec asks for: after a resume token,
// at an operation time, or at the newest visible entry.
func Open(spec *Spec, src Source) (*Stream, error) {
	s := &Stream{spec: spec, src: src, maxBacklog: MaxExpireBacklog}
	now, _ := src.Clock()
	s.expW = now.UnixMilli()
	oldest, err := src.OldestOplog()
	if err != nil {
		return nil, err
	}
	lost := func(ts oplog.Timestamp) error {
		if !oldest.IsZero() && ts.Less(oldest) {
			return mongoerr.New(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
		}
		return nil
	}
	tok := spec.ResumeAfter
	if tok == nil {
		tok = spec.StartAfter
	}
	switch {
	case tok != nil:
		if err := lost(tok.TS); err != nil {
			return nil, err
		}
		if tok.HighWater() || tok.Invalidate() {
			// Everything at the token's entry has been seen, or the
			// stream starts after the invalidate of that entry.
			s.after = tok.TS
		} else {
			s.after = tok.TS.Prev()
			t := *tok
			s.check = &t
		}
		if tok.V2 {
			s.expW, s.expTail = tok.Expire, tok.Tail
		}
		if tok.IsExpire() {
			s.after, s.check = tok.TS, nil
		}
		s.last = *tok
	case !spec.StartAt.IsZero():
		if err := lost(spec.StartAt); err != nil {
			return nil, err
		}
		s.after = spec.StartAt.Prev()
		s.last = Token{TS: s.after, Flags: flagHighWater}
	default:
		s.after, _ = src.Watch()
		if st, ok := src.(Starter); ok {
			if s.after, err = st.Start(); err != nil {
				return nil, err
			}
		}
		s.last = Token{TS: s.after, Flags: flagHighWater}
	}
	return s, nil
}

// Done reports whether the stream has ended with an invalidate.
func (s *Stream) Done() bool { return s.done }

// PostBatchResumeToken is the token a client resumes from after the last
// batch: that of its last event, or the point in the oplog read up to.
func (s *Stream) PostBatchResumeToken() bson.Raw {
	if len(s.pending) == 0 && s.check == nil && (s.last.HighWater() || s.last.TS.Less(s.after)) {
		return s.position(Token{TS: s.after, Flags: flagHighWater}).Doc()
	}
	return s.last.Doc()
}

// Next returns the next batch of at most n events (n <= 0: no bound but
// the bytes). With await it waits for events until ctx is done; an expired
// deadline ends the wait with an empty batch, as maxAwaitTimeMS does.
func (s *Stream) Next(ctx context.Context, n, maxBytes int, await bool) ([]bson.Raw, error) {
	for {
		if s.done {
			return nil, nil
		}
		out, err := s.fill(ctx, n, maxBytes)
		if err != nil && await && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			// The wait ended while a read ran: as at the end of any
			// wait, an empty batch, not MaxTimeMSExpired; the read
			// kept what it had read, or nothing.
			return nil, nil
		}
		if err != nil || len(out) > 0 || !await || s.done {
			return out, err
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, nil
			}
			return nil, err
		}
		if len(s.pending) > 0 {
			continue // events the later stages dropped; more to look at
		}
		visible, moved := s.src.Watch()
		if s.after.Less(visible) {
			continue
		}
		var clockMoved <-chan struct{}
		var expiryDue <-chan time.Time
		if s.spec.ShowExpireEvents {
			var now time.Time
			if now, clockMoved = s.src.Clock(); clockMoved != nil && now.UnixMilli() > s.expW {
				continue // a manual clock moved since the read
			}
			if clockMoved == nil {
				// The system clock moves without notice: wake at the next
				// expiry within the wait, so that its event comes at its
				// instant rather than at the end of the wait.
				due, err := s.nextExpiry(ctx, now)
				if err != nil {
					return nil, err
				}
				expiryDue = due
			}
		}
		if s.await(ctx, moved, clockMoved, expiryDue) {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if s.spec.ShowExpireEvents {
					// The system clock moves without notice: look
					// once more for what expired during the wait.
					return s.fill(context.WithoutCancel(ctx), n, maxBytes)
				}
				return nil, nil
			}
			return nil, ctx.Err()
		}
	}
}

// await blocks until the oplog moves, the manual clock moves, an expiry
// falls due or ctx is done, and reports whether ctx ended the wait. Nil
// channels never fire.
func (s *Stream) await(ctx context.Context, moved, clockMoved <-chan struct{}, expiryDue <-chan time.Time) (ctxDone bool) {
	if s.Waiting != nil {
		s.Waiting(true)
		defer s.Waiting(false)
	}
	select {
	case <-moved:
	case <-clockMoved:
	case <-expiryDue:
	case <-ctx.Done():
		return true
	}
	return false
}

// nextExpiry returns a channel that fires at the first expiry after now
// and before ctx's deadline among the namespaces the stream watches, nil
// if there is none. (An unfired time.After is collected since Go 1.23.)
func (s *Stream) nextExpiry(ctx context.Context, now time.Time) (<-chan time.Time, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(maxExpiryLookahead)
	}
	from := max(now.UnixMilli(), s.expW)
	got, err := s.src.Expiring(from, min(deadline.UnixMilli(), from+maxExpiryLookahead.Milliseconds()), s.spec.watches)
	if err != nil || len(got) == 0 {
		return nil, err
	}
	// A millisecond late, so that the read finds the clock past it.
	return time.After(time.UnixMilli(got[0].At + 1).Sub(now)), nil
}

// maxExpiryLookahead bounds how far ahead a waiting stream looks for the
// next expiry; it looks again after each wake.
const maxExpiryLookahead = time.Minute

// fill reads entries until n events are pending or the visible entries
// end, then hands out up to n of them.
func (s *Stream) fill(ctx context.Context, n, maxBytes int) ([]bson.Raw, error) {
	want := n
	if want <= 0 {
		want = readAhead
	}
	if len(s.pending) < want && s.spec.ShowExpireEvents {
		if err := s.readWithExpiry(ctx); err != nil {
			return nil, err
		}
	} else if len(s.pending) < want {
		// Every entry up to the visible point is read unless the read
		// stops early; the point may be past the last entry (a failed
		// write leaves a hole), and the stream moves there too, or it
		// would wake for it forever.
		visible, _ := s.src.Watch()
		stopped := false
		var err error
		_, err = s.src.ReadOplog(ctx, s.after, func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
			before := len(s.pending)
			if s.pending, err = s.spec.events(s.pending, ts, raw); err != nil {
				return false, err
			}
			if s.check != nil {
				if err := s.resolve(ts, before); err != nil {
					return false, err
				}
			}
			s.after = ts
			stopped = len(s.pending) >= want
			return !stopped, nil
		})
		if err != nil {
			return nil, err
		}
		if !stopped && s.after.Less(visible) {
			s.after = visible
			if s.check != nil && !visible.Less(s.check.TS) {
				// The token's entry is gone without a trace.
				return nil, s.resolve(oplog.Timestamp{}, len(s.pending))
			}
		}
	}
	var out []bson.Raw
	size := 0
	for len(s.pending) > 0 && len(out) < want {
		ev := &s.pending[0]
		doc, err := s.spec.encode(ev, s.src)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && size+len(doc) > maxBytes {
			break
		}
		size += len(doc)
		out = append(out, doc)
		s.last = ev.tok
		if ev.op == "invalidate" {
			s.done = true
		}
		s.pending = s.pending[1:]
		if s.done {
			s.pending = nil
		}
	}
	if s.Post != nil && len(out) > 0 {
		// These events are handed out already: the stages run on
		// them even if the getMore's wait has ended meanwhile.
		return s.Post(context.WithoutCancel(ctx), out)
	}
	return out, nil
}

// resolve checks, at the first entry read after a resume, that the stream
// produces the token's event there, and drops the events up to it.
func (s *Stream) resolve(ts oplog.Timestamp, from int) error {
	tok := *s.check
	s.check = nil
	if ts == tok.TS {
		for i := from; i < len(s.pending); i++ {
			if s.pending[i].tok.sameEvent(tok) {
				s.pending = append(s.pending[:from], s.pending[i+1:]...)
				return nil
			}
		}
	}
	return mongoerr.New(mongoerr.ChangeStreamFatalError, "cannot resume stream; the resume token was not found. %s", tok.Doc())
}
