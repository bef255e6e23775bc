package engine

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

// Expiring is a document whose expiry instant falls in a window.
type Expiring struct {
	DB, Coll string
	ID       bsoncore.Value
	// Key is the _id in index-key form: it orders documents of one
	// collection that expire at the same instant.
	Key []byte
	At  int64 // the expiry instant, Unix milliseconds
}

// ExpiringIn returns the documents of the collections watch accepts whose
// expiry instant falls in (fromMs, toMs], ordered by instant, namespace and
// _id. The instant is _ts plus the lifetime for collections with TTL, and
// the earliest date plus expireAfterSeconds for date TTL indexes (the
// earlier of the two when both apply). Like the reaper, it range-scans the
// expiry families and the date range of TTL indexes, never a collection.
func (e *Engine) ExpiringIn(fromMs, toMs int64, watch func(db, coll string) bool) ([]Expiring, error) {
	if toMs <= fromMs {
		return nil, nil
	}
	var out []Expiring
	for _, c := range e.openCollections() {
		st := c.st()
		if st.dropped || !watch(st.meta.DB, st.meta.Name) {
			continue
		}
		got, err := e.expiringInColl(c, fromMs, toMs)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.At != b.At {
			return a.At < b.At
		}
		if a.DB+"."+a.Coll != b.DB+"."+b.Coll {
			return a.DB+"."+a.Coll < b.DB+"."+b.Coll
		}
		return bytes.Compare(a.Key, b.Key) < 0
	})
	return out, nil
}

func (e *Engine) expiringInColl(c *Collection, fromMs, toMs int64) ([]Expiring, error) {
	c.ddl.RLock()
	defer c.ddl.RUnlock()
	st := c.st()
	if st.dropped {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []Expiring
	consider := func(pk []byte) error {
		if seen[string(pk)] {
			return nil
		}
		seen[string(pk)] = true
		d, err := e.loadDoc(context.TODO(), e.store, st.meta.ID, pk)
		if err != nil || d == nil {
			return err
		}
		at, ok := st.expiryOf(d)
		if !ok || at <= fromMs || at > toMs {
			return nil
		}
		id := bsoncore.Document(d.doc).Lookup("_id")
		out = append(out, Expiring{DB: st.meta.DB, Coll: st.meta.Name, ID: id, Key: keycodec.Append(nil, id), At: at})
		return nil
	}
	id := st.meta.ID
	if st.ttl.Enabled {
		if st.ttl.Default > 0 {
			shift := int64(st.ttl.Default) * 1000
			_, lo := ttlindex.TSRange(id, fromMs-shift)
			_, hi := ttlindex.TSRange(id, toMs-shift)
			if err := e.scanPKs(lo, hi, true, consider); err != nil {
				return nil, err
			}
		}
		_, lo := ttlindex.OwnRange(id, fromMs)
		_, hi := ttlindex.OwnRange(id, toMs)
		if err := e.scanPKs(lo, hi, true, consider); err != nil {
			return nil, err
		}
	}
	for _, ix := range st.dateTTL {
		shift := int64(*ix.Meta.ExpireAfter) * 1000
		dateValue := func(ms int64) bsoncore.Value {
			return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
		}
		// Dates in (from, to]: in an ascending index, the entries past
		// every key that starts with from's and up to those that start
		// with to's; in a descending one, whose keys sort in reverse, from
		// the first that starts with to's up to the first that starts with
		// from's.
		var lo, hi []byte
		if ix.Fields[0].Desc {
			lo = keycodec.AppendDesc(record.IndexPrefix(nil, ix.Meta.ID), dateValue(toMs-shift))
			hi = keycodec.AppendDesc(record.IndexPrefix(nil, ix.Meta.ID), dateValue(fromMs-shift))
		} else {
			lo = append(record.IndexPrefix(nil, ix.Meta.ID), record.PrefixEnd(keycodec.Append(nil, dateValue(fromMs-shift)))...)
			hi = append(record.IndexPrefix(nil, ix.Meta.ID), record.PrefixEnd(keycodec.Append(nil, dateValue(toMs-shift)))...)
		}
		if err := e.scanPKs(lo, hi, false, consider); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expiryOf is the instant d expires: under the collection's TTL or the
// earliest under its date TTL indexes.
func (st *collState) expiryOf(d *storedDoc) (int64, bool) {
	at, ok := int64(0), false
	if st.ttl.Enabled {
		at, ok = ttlindex.ExpireAt(st.ttl, d.h.TS, d.h.TTL)
	}
	for _, ix := range st.dateTTL {
		shift := int64(*ix.Meta.ExpireAfter) * 1000
		vals, _ := record.IndexValues(bsoncore.Document(d.doc), ix.Fields[0].Path)
		for _, v := range vals {
			if ms, isDate := v.DateTimeOK(); isDate && (!ok || ms+shift < at) {
				at, ok = ms+shift, true
			}
		}
	}
	return at, ok
}

// scanPKs calls fn with the primary key of each entry in [lo, hi): taken
// from the key of an expiry entry, or from the value of an index entry.
func (e *Engine) scanPKs(lo, hi []byte, expiryKeys bool, fn func(pk []byte) error) error {
	it, err := e.store.Iter(context.TODO(), lo, hi, false)
	if err != nil {
		return fmt.Errorf("engine: scan expiring: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		pk := it.Value()
		if expiryKeys {
			if _, _, _, pk, err = ttlindex.ParseKey(it.Key()); err != nil {
				return err
			}
		}
		if err := fn(append([]byte(nil), pk...)); err != nil {
			return err
		}
	}
	return it.Error()
}
