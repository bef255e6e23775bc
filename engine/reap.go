package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

// ReapBatch implements ttlindex.Store: it deletes up to limit documents
// that are due at now, found by range scans of the expiry families and of
// date TTL indexes, never by scanning a collection.
func (e *Engine) ReapBatch(now time.Time, limit int) (deleted int, more bool, next time.Time, err error) {
	nowMs := now.UnixMilli()
	nextMs := int64(math.MaxInt64)
	for _, c := range e.openCollections() {
		if deleted >= limit {
			return deleted, true, time.Time{}, nil
		}
		n, nm, full, err := e.reapCollection(c, nowMs, limit-deleted)
		deleted += n
		if err != nil {
			return deleted, false, time.Time{}, err
		}
		if full {
			more = true
		}
		nextMs = min(nextMs, nm)
	}
	if nextMs != math.MaxInt64 {
		next = time.UnixMilli(nextMs)
	}
	return deleted, more, next, nil
}

// dueDoc is a document found due by an expiry scan, with the test that
// confirms it under the lock.
type dueDoc struct {
	pk    []byte
	isDue func(d *storedDoc) bool
}

// reapCollection deletes up to limit due documents of one collection. It
// reports how many, the earliest future due time it saw, and whether it
// stopped at the limit.
func (e *Engine) reapCollection(c *Collection, nowMs int64, limit int) (n int, nextMs int64, full bool, err error) {
	c.ddl.RLock()
	defer c.ddl.RUnlock()
	st := c.st()
	if st.dropped {
		return 0, math.MaxInt64, false, nil
	}
	cur := &c.reapCursor
	due, nextMs, err := e.dueDocs(st, nowMs, limit, cur)
	if err != nil {
		return 0, nextMs, false, err
	}
	// A full batch may have left more behind; if exactly limit were due,
	// the next batch finds none.
	if len(due) == limit {
		full = true
	} else {
		// The collection is done for this pass; the next pass rescans from
		// the start of each range.
		clear(cur.after)
	}
	if len(due) == 0 {
		return 0, nextMs, false, nil
	}
	start := time.Now()
	w := e.newWriter(c)
	// Purges are not acknowledged writes: one lost in a crash is simply
	// purged again, so they need not wait for a WAL sync.
	w.noSync = true
	defer w.close()
	defer func() {
		if n > 0 {
			e.log.Debug("ttl: purged expired documents", zap.String("ns", st.ns()), zap.Int("count", n), zap.Duration("duration", time.Since(start)))
		}
	}()
	for _, dd := range due {
		if _, err := w.lock(record.DocKey(nil, st.meta.ID, dd.pk)); err != nil {
			return n, nextMs, full, err
		}
		d, err := w.load(dd.pk)
		if err != nil {
			return n, nextMs, full, err
		}
		// A write may have moved _ts or ttl since the scan.
		if d == nil || !dd.isDue(d) {
			continue
		}
		logged := len(w.logged)
		if err := w.remove(d); err != nil {
			return n, nextMs, full, err
		}
		if len(w.logged) > logged {
			if at, ok := w.st.expiryOf(d); ok {
				w.logged[len(w.logged)-1].Expired, w.logged[len(w.logged)-1].ExpiredAt = true, at
			}
		}
		n++
	}
	return n, nextMs, full, w.flush()
}

// reapCursor remembers, per scanned range, the last key a reaping pass took,
// so that its next batch starts after it instead of stepping again over the
// tombstones the previous batches left. Only the reaper goroutine uses it.
type reapCursor struct {
	after map[string][]byte // by range start
}

// from returns where a scan of [lo, hi) should start.
func (rc *reapCursor) from(lo []byte) []byte {
	if rc == nil {
		return lo
	}
	if k, ok := rc.after[string(lo)]; ok {
		return record.KeySuccessor(k)
	}
	return lo
}

func (rc *reapCursor) record(lo, last []byte) {
	if rc == nil || last == nil {
		return
	}
	if rc.after == nil {
		rc.after = make(map[string][]byte)
	}
	rc.after[string(lo)] = append([]byte(nil), last...)
}

// dueDocs scans the expiry families and date TTL indexes of st for
// documents due at nowMs, up to limit, and the earliest future due time.
// A nil cursor scans every range from its start.
func (e *Engine) dueDocs(st *collState, nowMs int64, limit int, cur *reapCursor) ([]dueDoc, int64, error) {
	var due []dueDoc
	nextMs := int64(math.MaxInt64)
	seen := map[string]bool{}
	add := func(pk []byte, isDue func(*storedDoc) bool) {
		if !seen[string(pk)] {
			seen[string(pk)] = true
			due = append(due, dueDoc{pk: append([]byte(nil), pk...), isDue: isDue})
		}
	}
	expired := func(d *storedDoc) bool { return st.expired(d.h, nowMs) }
	id := st.meta.ID
	if st.ttl.Enabled {
		if st.ttl.Default > 0 {
			shift := int64(st.ttl.Default) * 1000
			lo, hi := ttlindex.TSRange(id, nowMs-shift)
			nm, err := e.scanExpiry(lo, hi, limit-len(due), cur, func(pk []byte) { add(pk, expired) })
			if err != nil {
				return nil, 0, err
			}
			if nm != math.MaxInt64 {
				nextMs = min(nextMs, nm+shift)
			}
		}
		lo, hi := ttlindex.OwnRange(id, nowMs)
		nm, err := e.scanExpiry(lo, hi, limit-len(due), cur, func(pk []byte) { add(pk, expired) })
		if err != nil {
			return nil, 0, err
		}
		nextMs = min(nextMs, nm)
	}
	for _, ix := range st.dateTTL {
		if len(due) >= limit {
			break
		}
		nm, err := e.scanDateTTL(ix, nowMs, limit-len(due), cur, add)
		if err != nil {
			return nil, 0, err
		}
		nextMs = min(nextMs, nm)
	}
	return due, nextMs, nil
}

// scanExpiry visits up to limit expiry keys in [lo, hi) and returns the
// time of the first key at or after hi within the family (MaxInt64 if none).
func (e *Engine) scanExpiry(lo, hi []byte, limit int, cur *reapCursor, fn func(pk []byte)) (int64, error) {
	it, err := e.store.Iter(context.TODO(), cur.from(lo), record.PrefixEnd(lo[:10]), false)
	if err != nil {
		return 0, fmt.Errorf("engine: scan expiry: %w", err)
	}
	defer it.Close()
	n := 0
	var last []byte
	defer func() { cur.record(lo, last) }()
	for ok := it.First(); ok; ok = it.Next() {
		_, _, ms, pk, err := ttlindex.ParseKey(it.Key())
		if err != nil {
			return 0, err
		}
		if bytes.Compare(it.Key(), hi) >= 0 {
			return ms, nil
		}
		if n >= limit {
			return math.MaxInt64, nil
		}
		fn(pk)
		last = append(last[:0], it.Key()...)
		n++
	}
	return math.MaxInt64, it.Error()
}

// scanDateTTL finds documents of a MongoDB date TTL index whose date is at
// most now - expireAfterSeconds. Dates form one key class, so the due
// entries are one contiguous range.
func (e *Engine) scanDateTTL(ix *record.Index, nowMs int64, limit int, cur *reapCursor, add func([]byte, func(*storedDoc) bool)) (int64, error) {
	shift := int64(*ix.Meta.ExpireAfter) * 1000
	bound := nowMs - shift
	dateClass := byte(keycodec.TypeClass(bsoncore.TypeDateTime))
	boundValue := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, bound)}
	// Due entries hold dates up to the bound: from the start of the date
	// class up to the bound's key, or, on a descending index, whose keys
	// are inverted, from the bound's key to the end of the class.
	var lo, hi []byte
	if ix.Fields[0].Desc {
		lo, hi = keycodec.AppendDesc(record.IndexPrefix(nil, ix.Meta.ID), boundValue), append(record.IndexPrefix(nil, ix.Meta.ID), ^dateClass+1)
	} else {
		lo, hi = append(record.IndexPrefix(nil, ix.Meta.ID), dateClass), append(record.IndexPrefix(nil, ix.Meta.ID), record.PrefixEnd(keycodec.Append(nil, boundValue))...)
	}
	isDue := func(d *storedDoc) bool {
		vals, _ := record.IndexValues(bsoncore.Document(d.doc), ix.Fields[0].Path)
		for _, v := range vals {
			if ms, ok := v.DateTimeOK(); ok && ms <= bound {
				return true
			}
		}
		return false
	}
	it, err := e.store.Iter(context.TODO(), cur.from(lo), hi, false)
	if err != nil {
		return 0, fmt.Errorf("engine: scan TTL index: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		add(it.Value(), isDue)
		cur.record(lo, it.Key())
		n++
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	// The next due document is the earliest date after the bound; for
	// simplicity the reaper's one-second cap covers it.
	return math.MaxInt64, nil
}
