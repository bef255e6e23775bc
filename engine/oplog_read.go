package engine

import (
	"bytes"
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

// isOplogNS reports whether db.coll is the oplog while it is on; with the
// oplog off, local.oplog.rs is an ordinary name, as on a standalone mongod.
func (e *Engine) isOplogNS(db, coll string) bool {
	return e.oplog != nil && db == "local" && coll == "oplog.rs"
}

// errOplogWrite refuses a client's write to the oplog, which only the
// server's own writes append to.
func errOplogWrite() error {
	return mongoerr.New(mongoerr.InvalidNamespace, "cannot write to '%s'", OplogNS)
}

// oplogScan is a find over local.oplog.rs: entries in timestamp order
// ($natural), or the reverse.
type oplogScan struct {
	reverse bool
	// from is the last timestamp read: entries after it are next (before
	// it in reverse; zero there means from the newest).
	from oplog.Timestamp
	done bool
	// sorted holds the matches of any other sort, read and sorted at open.
	sorted []bson.Raw
	inMem  bool
}

// findOplog opens a cursor over the oplog. Its natural order is timestamp
// order; a sort may ask for it, or its reverse, by $natural or ts. A
// filter on ts with $gt, $gte or equality starts the scan there. Any other
// sort reads the matches and sorts them in memory, within the sort limit.
func (e *Engine) findOplog(ctx context.Context, cur *Cursor, q *compiledQuery, spec FindSpec) (*Cursor, error) {
	sc := &oplogScan{}
	byTS := true
	if q.sort != nil {
		fields := q.sort.Fields()
		switch {
		case q.sort.Natural() != 0:
			sc.reverse = q.sort.Natural() < 0
		case len(fields) == 1 && fields[0].Path == "ts":
			sc.reverse = fields[0].Desc
		default:
			byTS = false
		}
	}
	if !sc.reverse {
		sc.from = oplogStartAfter(spec.Filter)
	}
	cur.ol = sc
	if !byTS {
		if err := sc.sortInMemory(ctx, e, q); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

func (s *oplogScan) sortInMemory(ctx context.Context, e *Engine, q *compiledQuery) error {
	limit := e.sortLimitOf()
	var held int64
	_, err := e.ReadOplog(ctx, s.from, func(_ oplog.Timestamp, raw bson.Raw) (bool, error) {
		if ok, err := q.filter.MatchErr(raw); err != nil || !ok {
			return err == nil, err
		}
		if held += int64(len(raw)); held > limit.Bytes {
			return false, limit.Exceeded(limit.Bytes)
		}
		s.sorted = append(s.sorted, bytes.Clone(raw))
		return true, nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(s.sorted, func(i, j int) bool { return q.sort.Compare(s.sorted[i], s.sorted[j]) < 0 })
	s.inMem = true
	return nil
}

// oplogStartAfter is the timestamp a filter on ts lets a forward scan start
// after; zero when the filter does not bound ts from below.
func oplogStartAfter(filter bson.Raw) oplog.Timestamp {
	v, err := filter.LookupErr("ts")
	if err != nil {
		return oplog.Timestamp{}
	}
	prev := func(t, i uint32) oplog.Timestamp { return oplog.Timestamp{T: t, I: i}.Prev() }
	if t, i, ok := v.TimestampOK(); ok {
		return prev(t, i)
	}
	d, ok := v.DocumentOK()
	if !ok {
		return oplog.Timestamp{}
	}
	var after oplog.Timestamp
	elems, _ := d.Elements()
	for _, el := range elems {
		t, i, ok := el.Value().TimestampOK()
		if !ok {
			continue
		}
		var b oplog.Timestamp
		switch el.Key() {
		case "$gt":
			b = oplog.Timestamp{T: t, I: i}
		case "$gte", "$eq":
			b = prev(t, i)
		default:
			continue
		}
		if after.Less(b) {
			after = b
		}
	}
	return after
}

// next passes entries to fn until it returns false or they end.
func (s *oplogScan) next(ctx context.Context, e *Engine, fn visitFunc) error {
	if s.done {
		return nil
	}
	if s.inMem {
		for len(s.sorted) > 0 {
			doc := s.sorted[0]
			s.sorted[0] = nil
			s.sorted = s.sorted[1:]
			more, err := fn(&storedDoc{doc: doc})
			if err != nil || !more {
				return err
			}
		}
		s.done = true
		return nil
	}
	stopped := false
	visit := func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		s.from = ts
		more, err := fn(&storedDoc{doc: raw})
		stopped = !more
		return more, err
	}
	var err error
	if s.reverse {
		err = e.readOplogReverse(ctx, s.from, visit)
	} else {
		_, err = e.ReadOplog(ctx, s.from, visit)
	}
	if err == nil && !stopped {
		s.done = true
	}
	return err
}

// readOplogReverse is ReadOplog from the newest visible entry backwards,
// starting before ts unless it is zero.
func (e *Engine) readOplogReverse(ctx context.Context, before oplog.Timestamp, fn func(oplog.Timestamp, bson.Raw) (bool, error)) error {
	visible := e.oplog.Visible()
	if before.IsZero() || visible.Less(before) {
		before = visible.Next()
	}
	lo, _ := oplog.Range()
	it, err := e.store.Iter(ctx, lo, oplog.AppendKey(nil, before), true)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		ts, err := oplog.KeyTS(it.Key())
		if err != nil {
			return err
		}
		more, err := fn(ts, bson.Raw(it.Value()))
		if err != nil || !more {
			return err
		}
	}
	return it.Error()
}
