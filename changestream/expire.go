package changestream

// Expire events (showExpireEvents): see the package doc for their order.

import (
	"bytes"
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// expiry is a document's expiry: its instant and its place among those of
// the same instant ("ns\x00" and the _id's key).
type expiry struct {
	at   int64
	tail []byte
	db   string
	coll string
	id   bsoncore.Value
}

func tailOf(db, coll string, key []byte) []byte {
	return append(append([]byte(db+"."+coll), 0), key...)
}

// seen reports whether the expire event of x is at or before the stream's
// expiry position.
func (s *Stream) seen(at int64, tail []byte) bool {
	if at != s.expW {
		return at < s.expW
	}
	return s.expTail == nil || bytes.Compare(tail, s.expTail) <= 0
}

// position gives t, the token of an oplog event or a high-water mark, the
// stream's expiry position.
func (s *Stream) position(t Token) Token {
	if s.spec.ShowExpireEvents {
		t.V2, t.Expire, t.Tail = true, s.expW, s.expTail
	}
	return t
}

// scan returns the expiries in (from, to] past the stream's position.
func (s *Stream) scan(from, to int64) ([]expiry, error) {
	if s.expTail != nil && from == s.expW {
		from-- // the rest of instant expW is still to come
	}
	got, err := s.src.Expiring(from, to, s.spec.watches)
	if err != nil {
		return nil, err
	}
	var out []expiry
	for _, x := range got {
		e := expiry{at: x.At, tail: tailOf(x.DB, x.Coll, x.Key), db: x.DB, coll: x.Coll, id: x.ID}
		if !s.seen(e.at, e.tail) {
			out = append(out, e)
		}
	}
	return out, nil
}

// MaxExpireBacklog is the most events a stream with showExpireEvents
// gathers in one read: the oplog entries and expiries since its position.
// A stream further behind fails with ExceededMemoryLimit rather than hold
// them all; it can be resumed from a later point.
const MaxExpireBacklog = 100_000

func (s *Stream) backlogError() error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit,
		"a change stream with showExpireEvents is more than %d events behind, more than it gathers at once; resume it from a later point or read it more often", s.maxBacklog)
}

// readWithExpiry reads the oplog up to the visible point, as fill does,
// and merges in the expire events of the documents that expired since the
// stream's expiry position, up to the clock's now.
//
// Expiry is found twice over: by scanning what is stored (the documents
// the reaper has not purged yet) and from the purge entries in the oplog
// (those it has). The scan comes first, so a document is either still
// stored then or its purge is already in the oplog the read that follows
// sees. Each expire event goes before the delete of its purge, and all
// of them in order of instant, _id breaking ties.
//
// The read stops before a purge of a document that expired after now if
// the clock has moved on while this read ran: documents that expired
// between now and that purge's instant may still be stored, unscanned,
// and purged at any moment. The next read, whose now has passed the
// purge's instant, scans them and takes the purge. If the clock is still
// behind the purge's instant, it went back (a manual clock starts afresh
// at each restart; a system clock may be stepped back): waiting for it
// could take days, so the purge is taken now, and its expire event with
// it. The stream's expiry position never goes back, so documents that the
// clock, gone back, lets expire behind it have their delete but no expire
// event.
//
// On a source that is a Starter, "already in the oplog" means committed
// before the scan began, which the read waits to see (Starter.Start).
//
// A failed read (a getMore's wait that ends during it) leaves the stream
// where it was: a part of it would lose the expire events it had merged.
func (s *Stream) readWithExpiry(ctx context.Context) (err error) {
	nowT, _ := s.src.Clock()
	now := nowT.UnixMilli()
	base, after, check := len(s.pending), s.after, s.check
	defer func() {
		if err != nil {
			s.pending, s.after, s.check = s.pending[:base], after, check
		}
	}()
	// On a source whose commits become visible some time after they are
	// acknowledged (servers sharing a store), a purge committed before
	// the scan may not be visible yet: the read waits until it is, or
	// the document would be neither scanned nor read.
	var scanned oplog.Timestamp
	if st, ok := s.src.(Starter); ok {
		if scanned, err = st.Start(); err != nil {
			return err
		}
	}
	exps, err := s.scan(s.expW, now)
	if err != nil {
		return err
	}
	if len(exps) > s.maxBacklog {
		return s.backlogError()
	}
	visible, err := s.reach(ctx, scanned)
	if err != nil {
		return err
	}
	stopped := false
	_, err = s.src.ReadOplog(ctx, s.after, func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		if at, ok := bsoncore.Document(raw).Lookup("expiredAt").DateTimeOK(); ok && at > now {
			if again, _ := s.src.Clock(); again.UnixMilli() >= at {
				stopped = true
				return false, nil
			}
		}
		before := len(s.pending)
		if s.pending, err = s.spec.events(s.pending, ts, raw); err != nil {
			return false, err
		}
		if at, ok := bsoncore.Document(raw).Lookup("expiredAt").DateTimeOK(); ok && len(s.pending) > before {
			ev := &s.pending[len(s.pending)-1]
			if ev.op == "delete" {
				ev.purged, ev.expiredAt = true, at
				ev.purgeTail = tailOf(ev.db, ev.coll, keycodec.Append(nil, ev.key.Lookup("_id")))
				if !s.seen(at, ev.purgeTail) {
					exps = append(exps, expiry{at: at, tail: ev.purgeTail, db: ev.db, coll: ev.coll, id: ev.key.Lookup("_id")})
				}
			}
		}
		if s.check != nil {
			if err := s.resolve(ts, before); err != nil {
				return false, err
			}
		}
		s.after = ts
		// Such a read cannot stop part way without losing expire events,
		// so it gathers everything up to the visible point: bound it,
		// rather than let one stream hold an unbounded backlog.
		if len(exps)+len(s.pending)-base > s.maxBacklog {
			return false, s.backlogError()
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if !stopped && s.after.Less(visible) {
		s.after = visible
		if s.check != nil && !visible.Less(s.check.TS) {
			return s.resolve(oplog.Timestamp{}, len(s.pending))
		}
	}
	sort.Slice(exps, func(i, j int) bool {
		if exps[i].at != exps[j].at {
			return exps[i].at < exps[j].at
		}
		return bytes.Compare(exps[i].tail, exps[j].tail) < 0
	})
	read := append([]event(nil), s.pending[base:]...)
	s.pending = s.pending[:base]
	emit := func(upTo func(expiry) bool, ts oplog.Timestamp) {
		for len(exps) > 0 && upTo(exps[0]) {
			x := exps[0]
			exps = exps[1:]
			if s.seen(x.at, x.tail) {
				continue // found both stored and purged
			}
			s.expW, s.expTail = x.at, x.tail
			tok := Token{TS: ts, Flags: flagExpire, V2: true, Expire: x.at, Tail: x.tail}
			s.pending = append(s.pending, event{tok: tok, op: "expire", db: x.db, coll: x.coll, key: oplog.IDDoc(x.id), wall: x.at})
		}
	}
	for _, ev := range read {
		if ev.purged {
			// Resuming from these tokens reads the purge again: its
			// expire event is then behind the position, its delete not.
			emit(func(x expiry) bool {
				return x.at < ev.expiredAt || x.at == ev.expiredAt && bytes.Compare(x.tail, ev.purgeTail) <= 0
			}, ev.tok.TS.Prev())
		}
		ev.tok = s.position(ev.tok)
		s.pending = append(s.pending, ev)
	}
	emit(func(expiry) bool { return true }, s.after)
	if now >= s.expW {
		s.expW, s.expTail = now, nil
	}
	return nil
}

// reach waits until the visible point is at or past ts, and returns it.
func (s *Stream) reach(ctx context.Context, ts oplog.Timestamp) (oplog.Timestamp, error) {
	for {
		visible, moved := s.src.Watch()
		if !visible.Less(ts) {
			return visible, nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return visible, ctx.Err()
		}
	}
}
