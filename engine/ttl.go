package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/expiryscan"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/internal/invariants"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// TTL glue: the reaper's batches (ttlindex.Store) and ExpiringIn, over
// the scans of package expiryscan.

// ReapBatch implements ttlindex.Store: it deletes up to limit documents
// that are due at now, found by range scans of the expiry families and of
// date TTL indexes, never by scanning a collection. On a shared store it
// scans only the ranges this server holds (ttlshare.go).
func (e *Engine) ReapBatch(ctx context.Context, now time.Time, limit int) (deleted int, more bool, next time.Time, err error) {
	scope := e.reapScope()
	if scope.none {
		return 0, false, time.Time{}, nil
	}
	nowMs := now.UnixMilli()
	nextMs := int64(math.MaxInt64)
	for _, c := range e.openCollections() {
		if deleted >= limit {
			return deleted, true, time.Time{}, nil
		}
		n, nm, full, err := e.reapCollection(ctx, c, scope, nowMs, limit-deleted)
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

// reapCollection deletes up to limit due documents of one collection. It
// reports how many, the earliest future due time it saw, and whether it
// stopped at the limit.
func (e *Engine) reapCollection(ctx context.Context, c *Collection, scope reapScope, nowMs int64, limit int) (n int, nextMs int64, full bool, err error) {
	c.ddl.RLock()
	defer c.ddl.RUnlock()
	st := c.st()
	if st.dropped {
		return 0, math.MaxInt64, false, nil
	}
	if st.meta.Fence != "" {
		// A catalog change holds its writes off (fence.go): a pass a
		// second later looks again.
		return 0, nowMs + 1000, false, nil
	}
	cur := &c.reapCursor
	scan := st.expiry()
	if scope.dateTTL != nil {
		scan.DateTTL = slices.DeleteFunc(slices.Clone(scan.DateTTL), func(ix *record.Index) bool { return !scope.dateTTL(ix) })
	}
	due, nextMs, err := expiryscan.DueDocs(ctx, scope.r, scan, nowMs, limit, cur)
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
		cur.Reset()
	}
	if len(due) == 0 {
		return 0, nextMs, false, nil
	}
	start := time.Now()
	w := e.newWriter(ctx, c)
	// Purges are not acknowledged writes: one lost in a crash is simply
	// purged again, so they need not wait for a WAL sync.
	w.noSync = true
	defer w.close()
	defer func() {
		if n > 0 {
			e.log.Debug("ttl: purged expired documents", zap.String("ns", st.ns()), zap.Int("count", n), zap.Duration("duration", time.Since(start)))
		}
	}()
	// Lock first, then read every locked document through one iterator in
	// key order: with the locks held nothing can change them any more, and
	// ordered seeks of one iterator cost the store much less than a point
	// lookup each (the lookups were nine tenths of a purge).
	sort.Slice(due, func(i, j int) bool { return bytes.Compare(due[i].PK, due[j].PK) < 0 })
	locked := due[:0]
	for _, dd := range due {
		// A document another transaction holds (an open multi-document
		// transaction may hold it for up to its lifetime) is left for a
		// pass a second later rather than waited for: the purge re-reads
		// it then, and one the transaction rewrote may no longer be due.
		ok, err := w.tryLock(record.DocKey(nil, st.meta.ID, dd.PK))
		if err != nil {
			return n, nextMs, full, err
		}
		if !ok {
			nextMs = min(nextMs, nowMs+1000)
			continue
		}
		locked = append(locked, dd)
	}
	if len(st.indexes) == 0 && !st.preImages {
		// Nothing but the expiry entry derives from these documents, and
		// no pre-image keeps them: their entries say all a purge needs.
		purged, read, err := w.purgeByEntries(locked)
		n += purged
		if err != nil {
			return n, nextMs, full, err
		}
		locked = read
	}
	docs, err := w.loadSorted(locked)
	if err != nil {
		return n, nextMs, full, err
	}
	for i, dd := range locked {
		d := docs[i]
		// A write may have moved _ts or ttl since the scan.
		if d == nil || !dd.IsDue(d.h, d.doc) {
			continue
		}
		logged := len(w.logged)
		if err := w.remove(d); err != nil {
			return n, nextMs, full, err
		}
		if len(w.logged) > logged {
			if at, ok := w.st.expiry().ExpiryOf(d.h, d.doc); ok {
				w.logged[len(w.logged)-1].Expired, w.logged[len(w.logged)-1].ExpiredAt = true, at
			}
		}
		n++
	}
	if err := w.flush(); err != nil {
		if kv.IsConflict(err) {
			// A write committed over one of the batch's documents between
			// the reads and the commit (only TiKV can tell, at commit):
			// nothing was purged, and a pass a second later reads them
			// again.
			return 0, min(nextMs, nowMs+1000), false, nil
		}
		return 0, nextMs, full, err
	}
	return n, nextMs, full, nil
}

// purgeByEntries purges the locked documents of due without reading
// them, from the expiry entries they were found by, for a collection whose
// documents have no other entries and no pre-images. While an entry stands
// its document is unchanged in all that makes it due: a write that moves
// _ts or ttl moves the entry, and the collection's TTL setting cannot
// change during the purge, which holds its ddl lock. It returns the
// documents that must be read instead: those found by a date TTL index,
// and those whose entry was stored empty, before entries named the _id.
func (w *writer) purgeByEntries(due []expiryscan.Due) (purged int, read []expiryscan.Due, err error) {
	entries := make([][]byte, len(due))
	for i, dd := range due {
		entries[i] = dd.Entry
	}
	ids, err := w.readKeys(entries, "expiry entries")
	if err != nil {
		return 0, nil, err
	}
	b, err := w.begin()
	if err != nil {
		return 0, nil, err
	}
	var dk []byte
	entries = entries[:0]
	for i, dd := range due {
		id := ids[i]
		switch {
		case dd.Entry == nil || id != nil && len(id) == 0:
			read = append(read, dd)
			continue
		case id == nil:
			// Written or deleted since the scan: if it is still due, its
			// new entry brings it to a later pass.
			continue
		}
		dk = record.DocKey(dk[:0], w.st.meta.ID, dd.PK)
		invariants.Check(!invariants.Enabled || w.holds(dk), "a purge of %x without its lock", dk)
		if err := b.Delete(dk); err != nil {
			return purged, nil, err
		}
		entries = append(entries, dd.Entry)
		if w.e.oplog != nil {
			at := dd.Millis
			if dd.Kind == ttlindex.KindTS {
				at, _ = ttlindex.ExpireAt(w.st.ttl, dd.Millis, ttlindex.NoTTL)
			}
			ent := oplog.Entry{Op: oplog.Delete, NS: w.st.ns(), UI: w.st.meta.UUID.Data, O: id, Expired: true, ExpiredAt: at}
			w.logged = append(w.logged, w.tag(ent))
		}
		purged++
	}
	// The entries' deletions follow the documents', in key order: a
	// memtable inserts a batch's keys in the batch's order, and finds the
	// place of a key next to the one before it from there rather than from
	// the top. Alternating between the two families cost a search from the
	// top for every key (BenchmarkReap: about a tenth of a purge).
	slices.SortFunc(entries, bytes.Compare)
	for _, k := range entries {
		if err := b.Delete(k); err != nil {
			return purged, nil, err
		}
	}
	return purged, read, nil
}

// readKeys returns the values of keys, nil for those that are gone or are
// nil themselves, and a value present but empty as empty, not nil. It reads
// them through one iterator in key order, whatever order they are given
// in: ordered seeks of one iterator cost the store much less than a point
// lookup each. On a sharded store a seek costs a request per bucket of the
// key's family, a read one request, so there it reads them one by one.
func (w *writer) readKeys(keys [][]byte, what string) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	var order []int
	for i, k := range keys {
		if k != nil {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return vals, nil
	}
	if w.e.sharded {
		for _, i := range order {
			v, err := w.reader().Get(w.ctx, keys[i])
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("engine: read %s: %w", what, err)
			}
			vals[i] = append([]byte{}, v...)
		}
		return vals, nil
	}
	sort.Slice(order, func(a, b int) bool { return bytes.Compare(keys[order[a]], keys[order[b]]) < 0 })
	lo, hi := keys[order[0]], append(slices.Clone(keys[order[len(order)-1]]), 0)
	it, err := w.reader().Iter(w.ctx, lo, hi, false)
	if err != nil {
		return nil, fmt.Errorf("engine: read %s: %w", what, err)
	}
	defer it.Close()
	for _, i := range order {
		if it.SeekGE(keys[i]) && bytes.Equal(it.Key(), keys[i]) {
			vals[i] = append([]byte{}, it.Value()...)
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("engine: read %s: %w", what, err)
	}
	return vals, nil
}

// loadSorted reads the locked documents of due as w.load would one by
// one; nil for those that are gone.
func (w *writer) loadSorted(due []expiryscan.Due) ([]*storedDoc, error) {
	keys := make([][]byte, len(due))
	for i, dd := range due {
		keys[i] = record.DocKey(nil, w.st.meta.ID, dd.PK)
	}
	vals, err := w.readKeys(keys, "due documents")
	if err != nil {
		return nil, err
	}
	docs := make([]*storedDoc, len(due))
	for i, v := range vals {
		if v == nil {
			continue
		}
		if docs[i], err = decodeDoc(due[i].PK, v); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

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
func (e *Engine) ExpiringIn(ctx context.Context, fromMs, toMs int64, watch func(db, coll string) bool) ([]Expiring, error) {
	if toMs <= fromMs {
		return nil, nil
	}
	var out []Expiring
	for _, c := range e.openCollections() {
		st := c.st()
		if st.dropped || !watch(st.meta.DB, st.meta.Name) {
			continue
		}
		got, err := e.expiringInColl(ctx, c, fromMs, toMs)
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

func (e *Engine) expiringInColl(ctx context.Context, c *Collection, fromMs, toMs int64) ([]Expiring, error) {
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
		d, err := e.loadDoc(ctx, e.store, st.meta.ID, pk)
		if err != nil || d == nil {
			return err
		}
		at, ok := st.expiry().ExpiryOf(d.h, d.doc)
		if !ok || at <= fromMs || at > toMs {
			return nil
		}
		id := bsoncore.Document(d.doc).Lookup("_id")
		out = append(out, Expiring{DB: st.meta.DB, Coll: st.meta.Name, ID: id, Key: keycodec.Append(nil, id), At: at})
		return nil
	}
	if err := expiryscan.InWindow(ctx, e.store, st.expiry(), fromMs, toMs, consider); err != nil {
		return nil, err
	}
	return out, nil
}

// expiry is the collection as package expiryscan scans it.
func (st *collState) expiry() expiryscan.Collection {
	return expiryscan.Collection{ID: st.meta.ID, TTL: st.ttl, DateTTL: st.dateTTL}
}
