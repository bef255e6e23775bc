package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// scanStats counts work for explain.
type scanStats struct {
	keysExamined int64
	docsExamined int64
}

// scanner walks a plan's keys in order, one batch at a time. Every batch
// reads a fresh snapshot starting after the last key it returned, so a
// long-lived cursor pins no old data and sees expiry as it happens.
type scanner struct {
	e      *Engine
	coll   *Collection
	st     *collState // the collection's state for the current batch
	p      *plan
	resume []byte              // last key visited; nil before the first
	seen   map[string]struct{} // primary keys returned by a multikey index scan
	done   bool
	stats  scanStats
	// multi is the transaction the scan reads in, nil for none: it reads
	// the transaction's snapshot and own writes, under the collection
	// state the transaction runs under.
	multi *Transaction
	// cur is the document handed to the visitor, and key the document key
	// an index entry names, both reused from one document to the next:
	// the visitor may keep neither past its call, so a scan allocates
	// nothing of its own per document.
	cur storedDoc
	key []byte
	// curOwned is set when cur.doc was read by a Get, whose value is the
	// caller's to keep (kv.Reader), rather than from an iterator: a cursor
	// hands it out without a copy.
	curOwned bool
}

// visit is called with each visible document; d and its memory (storage
// memory) are valid only during the call. It returns false to end the
// batch.
type visitFunc func(d *storedDoc) (more bool, err error)

// next runs one batch: fn is called for visible documents until it returns
// false or the plan is exhausted.
func (s *scanner) next(ctx context.Context, fn visitFunc) error {
	if s.done {
		return nil
	}
	var r kv.Reader = s.e.store
	if t := s.multi; t != nil {
		if t.ended {
			s.done = true
			return errTransactionEnded
		}
		s.st, r = t.states[s.coll], t.reader()
	} else {
		// The state is re-read every batch so that TTL setting changes
		// apply to open cursors at once.
		s.st = s.coll.st()
	}
	if s.st.dropped {
		s.done = true
		return nil
	}
	// A batch reads one consistent state, so that no reader sees part of a
	// transaction: an index scan reads entries and documents through
	// separate lookups, and a plan of several spans or points reads
	// several iterators or keys, so both read a view (kv.View: a snapshot
	// for the batch alone). A plan of one span reads one iterator, and one
	// point one key, each consistent on its own; they skip it.
	if s.multi == nil && (s.p.kind == planIndex || len(s.p.spans) > 1) {
		snap, err := kv.View(ctx, s.e.store)
		if err != nil {
			return fmt.Errorf("engine: scan: %w", err)
		}
		defer snap.Close()
		r = snap
	}
	nowMs := s.e.nowMillis()
	if s.p.kind == planIndex && !s.p.reverse && len(s.p.spans) > 1 && s.p.ix.HasGeo() {
		more, err := s.seekSpans(ctx, r, nowMs, fn) // geo.go
		if err != nil || !more {
			return err
		}
		s.done = true
		return nil
	}
	for i := range s.p.spans {
		// A plan of many small spans (a geo covering's cells) checks the
		// context between them too, not only every few hundred keys.
		if i%64 == 63 && ctx.Err() != nil {
			return ctx.Err()
		}
		sp := s.p.spans[i]
		if s.p.reverse {
			sp = s.p.spans[len(s.p.spans)-1-i]
		}
		if s.resume != nil && s.p.kind == planIDPoints {
			// resume is the last point read: it and those before it in
			// the plan's order are done.
			if c := bytes.Compare(sp.lo, s.resume); (!s.p.reverse && c <= 0) || (s.p.reverse && c >= 0) {
				continue
			}
		} else if s.resume != nil {
			if !s.p.reverse && bytes.Compare(s.resume, sp.hi) >= 0 {
				continue
			}
			if s.p.reverse && bytes.Compare(s.resume, sp.lo) < 0 {
				continue
			}
		}
		var more bool
		var err error
		if s.p.kind == planIDPoints {
			more, err = s.readPoint(ctx, r, sp.lo, nowMs, fn)
		} else {
			more, err = s.scanSpan(ctx, r, sp, nowMs, fn)
		}
		if err != nil || !more {
			return err
		}
	}
	s.done = true
	return nil
}

// readPoint visits the document at one key.
func (s *scanner) readPoint(ctx context.Context, r kv.Reader, key []byte, nowMs int64, fn visitFunc) (bool, error) {
	s.resume = append(s.resume[:0], key...)
	s.stats.keysExamined++
	v, err := r.Get(ctx, key)
	if err == kv.ErrNotFound {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("engine: read document: %w", err)
	}
	s.stats.docsExamined++
	h, doc, err := record.SplitValue(v)
	if err != nil || s.st.expired(h, nowMs) {
		return err == nil, err
	}
	s.cur, s.curOwned = storedDoc{pk: record.PKOfDocKey(key), h: h, doc: doc}, true
	return fn(&s.cur)
}

func (s *scanner) scanSpan(ctx context.Context, r kv.Reader, sp span, nowMs int64, fn visitFunc) (bool, error) {
	lo, hi := sp.lo, sp.hi
	if s.resume != nil {
		if !s.p.reverse && bytes.Compare(s.resume, sp.lo) >= 0 {
			lo = record.KeySuccessor(s.resume)
		}
		if s.p.reverse && bytes.Compare(s.resume, sp.hi) < 0 {
			// A copy: the loop below rewrites s.resume, and the store
			// keeps the bound it is given for as long as the iterator
			// lives (pebble's IterOptions bounds).
			hi = bytes.Clone(s.resume)
		}
	}
	it, err := r.Iter(ctx, lo, hi, s.p.reverse)
	if err != nil {
		return false, fmt.Errorf("engine: scan: %w", err)
	}
	defer it.Close()
	for n, valid := 0, it.First(); valid; valid = it.Next() {
		// A scan over many keys stops when the command's maxTimeMS passes
		// or the server shuts down.
		if n++; n%256 == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		if more, err := s.visit(ctx, r, it, nowMs, fn); err != nil || !more {
			return false, err
		}
	}
	return true, it.Error()
}

// visit hands fn the document of the entry the iterator is at, unless the
// entry names none or the document has expired, and records the entry as
// where the scan resumes; more is false when fn stops the scan or fails.
func (s *scanner) visit(ctx context.Context, r kv.Reader, it kv.Iterator, nowMs int64, fn visitFunc) (more bool, err error) {
	s.resume = append(s.resume[:0], it.Key()...)
	d, err := s.docAt(ctx, r, it)
	if err != nil {
		return false, err
	}
	if d == nil || s.st.expired(d.h, nowMs) {
		return true, nil
	}
	return fn(d)
}

// docAt returns the document the iterator points at: the value itself for
// document keys, or the document an index entry names; nil when an entry
// names no document or one a multikey scan returned already.
func (s *scanner) docAt(ctx context.Context, r kv.Reader, it kv.Iterator) (*storedDoc, error) {
	var v []byte
	// A union of a $text and other clauses reads document keys too.
	if s.p.kind != planIndex || it.Key()[0] == record.PrefixDoc {
		if s.p.kind == planIDRange || s.p.kind == planIndex {
			s.stats.keysExamined++ // a key of _id's index, in MongoDB
		}
		s.stats.docsExamined++
		v = it.Value()
		s.cur.pk, s.curOwned = record.PKOfDocKey(it.Key()), false
		if s.p.textOr && s.dup(s.cur.pk) {
			return nil, nil
		}
	} else {
		s.stats.keysExamined++
		pk := it.Value()
		if (s.p.ix.Meta.Multikey || s.p.textOr) && s.dup(pk) {
			return nil, nil
		}
		s.stats.docsExamined++
		s.key = record.DocKey(s.key[:0], s.st.meta.ID, pk)
		var err error
		if v, err = r.Get(ctx, s.key); err == kv.ErrNotFound {
			return nil, nil
		} else if err != nil {
			return nil, fmt.Errorf("engine: read document: %w", err)
		}
		s.cur.pk, s.curOwned = pk, true
	}
	h, doc, err := record.SplitValue(v)
	if err != nil {
		return nil, err
	}
	s.cur.h, s.cur.doc = h, doc
	return &s.cur, nil
}

// dup reports whether the scan returned the document with primary key pk
// already, and remembers it: a multikey index has an entry for each of a
// document's values, and a union reads several indexes.
func (s *scanner) dup(pk []byte) bool {
	if s.seen == nil {
		s.seen = make(map[string]struct{})
	}
	if _, ok := s.seen[string(pk)]; ok {
		return true
	}
	s.seen[string(pk)] = struct{}{}
	return false
}

// killedSince is the error a cursor opened on the collection state opened
// ends with once the collection has been dropped or renamed, or the index
// ix its plan scans (nil: none) dropped; nil while the plan still stands.
// MongoDB kills such plans rather than let them read a namespace that now
// means something else.
func (st *collState) killedSince(opened *collState, ix *record.Index) error {
	switch {
	case st.dropped:
		return mongoerr.New(mongoerr.QueryPlanKilled, "collection dropped: %s", opened.ns())
	case st.renames != opened.renames:
		return mongoerr.New(mongoerr.QueryPlanKilled, "collection renamed from %s to %s", opened.ns(), st.ns())
	case ix != nil && !slices.ContainsFunc(st.indexes, func(x *record.Index) bool { return x.Meta.ID == ix.Meta.ID }):
		return mongoerr.New(mongoerr.QueryPlanKilled, "index '%s' dropped", ix.Meta.Name)
	}
	return nil
}
