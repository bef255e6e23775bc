package expiryscan

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

// Due is a document found due by an expiry scan, with the test that
// confirms it under the lock.
type Due struct {
	PK    []byte
	IsDue func(h record.Header, doc bson.Raw) bool
	// Entry is the expiry entry the document was found by, nil if it was
	// found by a date TTL index. While the entry stands, the document's
	// _ts and ttl still put it where the scan found it, so it is still due.
	Entry []byte
	// Kind and Millis are the entry's family (ttlindex.KindTS or KindOwn)
	// and instant.
	Kind   byte
	Millis int64
}

// Cursor remembers, per scanned range, the last key a reaping pass took,
// so that its next batch starts after it instead of stepping again over the
// tombstones the previous batches left. Only the reaper goroutine uses it.
type Cursor struct {
	after map[string][]byte // by range start
}

// Reset makes the next pass rescan from the start of each range.
func (rc *Cursor) Reset() { clear(rc.after) }

// from returns where a scan of [lo, hi) should start.
func (rc *Cursor) from(lo []byte) []byte {
	if rc == nil {
		return lo
	}
	if k, ok := rc.after[string(lo)]; ok {
		return record.KeySuccessor(k)
	}
	return lo
}

func (rc *Cursor) record(lo, last []byte) {
	if rc == nil || last == nil {
		return
	}
	if rc.after == nil {
		rc.after = make(map[string][]byte)
	}
	rc.after[string(lo)] = append([]byte(nil), last...)
}

// DueDocs scans the expiry families and date TTL indexes of c in s for
// documents due at nowMs, up to limit, and the earliest future due time.
// A nil cursor scans every range from its start.
func DueDocs(ctx context.Context, s kv.Reader, c Collection, nowMs int64, limit int, cur *Cursor) ([]Due, int64, error) {
	var due []Due
	nextMs := int64(math.MaxInt64)
	// seen holds the documents found so far, once a second range is
	// scanned: the first range names each document once (an expiry
	// family has one entry per document), so it needs none, and the
	// map was a tenth of a purge. A date TTL index on an array names a
	// document once per date, and so always dedupes.
	var seen map[string]bool
	dedupe := func() {
		if seen == nil {
			seen = make(map[string]bool, len(due))
			for _, d := range due {
				seen[string(d.PK)] = true
			}
		}
	}
	expired := func(h record.Header, _ bson.Raw) bool { return ttlindex.Expired(c.TTL, h.TS, h.TTL, nowMs) }
	// add takes d, whose slices are its own, unless its document is
	// already due by another range.
	add := func(d Due) {
		if seen != nil {
			if seen[string(d.PK)] {
				return
			}
			seen[string(d.PK)] = true
		}
		due = append(due, d)
	}
	addEntry := func(d Due) {
		d.IsDue = expired
		add(d)
	}
	id := c.ID
	if c.TTL.Enabled {
		if c.TTL.Default > 0 {
			shift := int64(c.TTL.Default) * 1000
			lo, hi := ttlindex.TSRange(id, nowMs-shift)
			nm, err := scanExpiry(ctx, s, lo, hi, limit-len(due), cur, addEntry)
			if err != nil {
				return nil, 0, err
			}
			if nm != math.MaxInt64 {
				nextMs = min(nextMs, nm+shift)
			}
			dedupe()
		}
		lo, hi := ttlindex.OwnRange(id, nowMs)
		nm, err := scanExpiry(ctx, s, lo, hi, limit-len(due), cur, addEntry)
		if err != nil {
			return nil, 0, err
		}
		nextMs = min(nextMs, nm)
	}
	for _, ix := range c.DateTTL {
		if len(due) >= limit {
			break
		}
		dedupe()
		nm, err := scanDateTTL(ctx, s, ix, nowMs, limit-len(due), cur, add)
		if err != nil {
			return nil, 0, err
		}
		nextMs = min(nextMs, nm)
	}
	return due, nextMs, nil
}

// scanExpiry visits up to limit expiry keys in [lo, hi), handing fn each
// as a Due of its own copy (IsDue unset), and returns the time of the first
// key at or after hi within the family (MaxInt64 if none).
func scanExpiry(ctx context.Context, s kv.Reader, lo, hi []byte, limit int, cur *Cursor, fn func(Due)) (int64, error) {
	it, err := s.Iter(ctx, cur.from(lo), record.PrefixEnd(lo[:10]), false)
	if err != nil {
		return 0, fmt.Errorf("engine: scan expiry: %w", err)
	}
	defer it.Close()
	n := 0
	var last []byte
	defer func() { cur.record(lo, last) }()
	for ok := it.First(); ok; ok = it.Next() {
		_, kind, ms, pk, err := ttlindex.ParseKey(it.Key())
		if err != nil {
			return 0, err
		}
		if bytes.Compare(it.Key(), hi) >= 0 {
			return ms, nil
		}
		if n >= limit {
			return math.MaxInt64, nil
		}
		entry := append([]byte(nil), it.Key()...)
		fn(Due{PK: entry[len(entry)-len(pk):], Entry: entry, Kind: kind, Millis: ms})
		last = append(last[:0], entry...)
		n++
	}
	return math.MaxInt64, it.Error()
}

// scanDateTTL finds documents of a MongoDB date TTL index whose date is at
// most now - expireAfterSeconds. Dates form one key class, so the due
// entries are one contiguous range.
func scanDateTTL(ctx context.Context, s kv.Reader, ix *record.Index, nowMs int64, limit int, cur *Cursor, add func(Due)) (int64, error) {
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
	isDue := func(_ record.Header, doc bson.Raw) bool {
		vals, _ := record.IndexValues(bsoncore.Document(doc), ix.Fields[0].Path)
		for _, v := range vals {
			if ms, ok := v.DateTimeOK(); ok && ms <= bound {
				return true
			}
		}
		return false
	}
	it, err := s.Iter(ctx, cur.from(lo), hi, false)
	if err != nil {
		return 0, fmt.Errorf("engine: scan TTL index: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		add(Due{PK: bytes.Clone(it.Value()), IsDue: isDue})
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
