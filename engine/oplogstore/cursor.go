package oplogstore

import (
	"bytes"
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/oplog"
)

// Cursor is a find over local.oplog.rs: entries in timestamp order
// ($natural), or the reverse.
type Cursor struct {
	store kv.Reader
	log   *oplog.Log

	reverse bool
	// from is the last timestamp read: entries after it are next (before
	// it in reverse; zero there means from the newest).
	from oplog.Timestamp
	done bool
	// sorted holds the matches of any other sort, read and sorted at open.
	sorted []bson.Raw
	inMem  bool
}

// Forward is a cursor over the entries of log in timestamp order, from
// where a filter on ts lets it start (StartAfter).
func Forward(s kv.Reader, log *oplog.Log, filter bson.Raw) *Cursor {
	return &Cursor{store: s, log: log, from: StartAfter(filter)}
}

// Open opens the cursor of a find over the oplog. Its natural order is
// timestamp order; a sort may ask for it, or its reverse, by $natural or
// ts. A filter on ts with $gt, $gte or equality starts the scan there. Any
// other sort reads the matches and sorts them in memory, within limit.
func Open(ctx context.Context, s kv.Reader, log *oplog.Log, rawFilter bson.Raw, filter *query.Filter, srt *query.Sort, limit pipeline.Limit) (*Cursor, error) {
	c := &Cursor{store: s, log: log}
	byTS := true
	if srt != nil {
		fields := srt.Fields()
		switch {
		case srt.Natural() != 0:
			c.reverse = srt.Natural() < 0
		case len(fields) == 1 && fields[0].Path == "ts":
			c.reverse = fields[0].Desc
		default:
			byTS = false
		}
	}
	if !c.reverse {
		c.from = StartAfter(rawFilter)
	}
	if !byTS {
		if err := c.sortInMemory(ctx, filter, srt, limit); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cursor) sortInMemory(ctx context.Context, filter *query.Filter, srt *query.Sort, limit pipeline.Limit) error {
	var held int64
	_, err := Read(ctx, c.store, c.log, c.from, func(_ oplog.Timestamp, raw bson.Raw) (bool, error) {
		if ok, err := filter.MatchErr(raw); err != nil || !ok {
			return err == nil, err
		}
		if held += int64(len(raw)); held > limit.Bytes {
			return false, limit.Exceeded(limit.Bytes)
		}
		c.sorted = append(c.sorted, bytes.Clone(raw))
		return true, nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(c.sorted, func(i, j int) bool { return srt.Compare(c.sorted[i], c.sorted[j]) < 0 })
	c.inMem = true
	return nil
}

// StartAfter is the timestamp a filter on ts lets a forward scan start
// after; zero when the filter does not bound ts from below.
func StartAfter(filter bson.Raw) oplog.Timestamp {
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

// Done reports whether the cursor has passed its last entry.
func (c *Cursor) Done() bool { return c.done }

// Next passes entries to fn until it returns false or they end.
func (c *Cursor) Next(ctx context.Context, fn func(entry bson.Raw) (more bool, err error)) error {
	if c.done {
		return nil
	}
	if c.inMem {
		for len(c.sorted) > 0 {
			doc := c.sorted[0]
			c.sorted[0] = nil
			c.sorted = c.sorted[1:]
			more, err := fn(doc)
			if err != nil || !more {
				return err
			}
		}
		c.done = true
		return nil
	}
	stopped := false
	visit := func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		c.from = ts
		more, err := fn(raw)
		stopped = !more
		return more, err
	}
	var err error
	if c.reverse {
		err = ReadReverse(ctx, c.store, c.log, c.from, visit)
	} else {
		_, err = Read(ctx, c.store, c.log, c.from, visit)
	}
	if err == nil && !stopped {
		c.done = true
	}
	return err
}
