package engine

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/distinct"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/ttlindex"
)

var bytesEqual = bytes.Equal

func timeOfMillis(ms int64) time.Time { return time.UnixMilli(ms) }

// loadDoc reads the document at pk from r (the store, a snapshot or a
// transaction); nil if there is none. The result owns its memory.
func (e *Engine) loadDoc(ctx context.Context, r kv.Reader, collID uint64, pk []byte) (*storedDoc, error) {
	v, err := r.Get(ctx, record.DocKey(nil, collID, pk))
	if err == kv.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read document: %w", err)
	}
	return decodeDoc(append([]byte(nil), pk...), v)
}

// decodeDoc is the document at pk whose stored value is v; it keeps pk and
// v as they are.
func decodeDoc(pk, v []byte) (*storedDoc, error) {
	h, doc, err := record.SplitValue(v)
	if err != nil {
		return nil, err
	}
	return &storedDoc{pk: pk, h: h, doc: bson.Raw(doc)}, nil
}

// expired reports whether a document with header h is expired under the
// collection's current setting at nowMs (TTL spec section 4).
func (st *collState) expired(h record.Header, nowMs int64) bool {
	return ttlindex.Expired(st.ttl, h.TS, h.TTL, nowMs)
}

// FindByID returns the live document of db.coll whose _id equals id, or
// nil: the point read behind find {_id: x}, without compiling a query.
// Under a collation other than the _id index's (FindPointByID), several
// may match: it returns the first a scan finds.
func (e *Engine) FindByID(ctx context.Context, db, coll string, id bsoncore.Value) (bson.Raw, error) {
	doc, point, err := e.FindPointByID(ctx, db, coll, id)
	if err != nil || point {
		return doc, err
	}
	return e.findOneByID(ctx, db, coll, id)
}

// FindPointByID is FindByID where the documents of db.coll whose _id
// equals id under ctx's collation are at most the one stored under id's
// key: where the command compares strings under the collation the primary
// keys are made under (collState.pkOf), or id holds no string. Elsewhere
// (under {strength: 2}, "foo" and "FOO" of a collection whose default
// tells them apart) it reads nothing and reports point false: find's fast
// path then takes the general one.
func (e *Engine) FindPointByID(ctx context.Context, db, coll string, id bsoncore.Value) (doc bson.Raw, point bool, err error) {
	c := e.collection(db, coll)
	if c == nil {
		return nil, true, nil
	}
	st, err := readState(ctx, c)
	if err != nil {
		return nil, false, err
	}
	if collation.Collatable(id) {
		qc, err := e.commandCollator(ctx, st)
		if err != nil || !collation.Equal(qc, st.idColl) {
			return nil, false, err
		}
	}
	var r kv.Reader = e.store
	if t := transactionOf(ctx); t != nil {
		r = t.reader()
	}
	c.usage.Access(0, e.clock).Ops.Add(1)
	// The key in one buffer, and the store's copy of the value returned
	// as it is: the commonest read allocates little besides that copy.
	key := record.DocKey(make([]byte, 0, 1+8+1+len(id.Data)+2), st.meta.ID, nil)
	v, err := r.Get(ctx, keycodec.Append(key, st.idColl.Key(id)))
	if err == kv.ErrNotFound {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("engine: read document: %w", err)
	}
	h, doc, err := record.SplitValue(v)
	if err != nil || st.expired(h, e.nowMillis()) {
		return nil, err == nil, err
	}
	return doc, true, nil
}

// findOneByID is FindByID through a plan: the first live document whose
// _id matches id under the command's collation.
func (e *Engine) findOneByID(ctx context.Context, db, coll string, id bsoncore.Value) (bson.Raw, error) {
	filter := bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
	var out bson.Raw
	err := e.scanMatches(ctx, db, coll, bson.Raw(filter), bson.RawValue{}, func(doc bson.Raw) bool {
		out = append(bson.Raw(nil), doc...)
		return false
	})
	return out, err
}

// scanMatches calls fn for each live document of db.coll that matches
// filter, in plan order, until fn returns false. A missing collection has
// none. doc is valid only during the call.
func (e *Engine) scanMatches(ctx context.Context, db, coll string, filter bson.Raw, hint bson.RawValue, fn func(doc bson.Raw) bool) error {
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return err
	}
	f, err := query.CompileWith(filter, query.Options{Now: e.clock.Now(), Collator: collator})
	if err != nil {
		return e.textIndexFirst(ctx, db, coll, err)
	}
	if e.isOplogNS(db, coll) {
		return oplogstore.Forward(e.store, e.oplog, filter).Next(ctx, func(doc bson.Raw) (bool, error) {
			matched, err := f.MatchErr(doc)
			if matched {
				return fn(doc), err
			}
			return err == nil, err
		})
	}
	c := e.collection(db, coll)
	if c == nil {
		return nil
	}
	st, err := readState(ctx, c)
	if err != nil {
		return err
	}
	if ns := f.Near(); ns != nil {
		// count and distinct need no order, but a $near still needs its
		// geo index, as in MongoDB, whose plans all read through it.
		if _, err := st.nearPlan(ns); err != nil {
			return err
		}
	}
	p, err := st.choosePlan(f, nil, hint)
	if err != nil {
		return err
	}
	p.countUse(&c.usage, e.clock)
	sc := &scanner{e: e, coll: c, p: p, multi: transactionOf(ctx)}
	m := f.Matcher()
	more := true
	for more && !sc.done {
		err := sc.next(ctx, func(d *storedDoc) (bool, error) {
			matched, err := m.MatchErr(d.doc)
			if matched {
				more = fn(d.doc)
			}
			return more && err == nil, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Count counts live documents matching filter after skip, up to limit
// (0: no limit). Expired documents are never counted (TTL spec rule 17).
func (e *Engine) Count(ctx context.Context, db, coll string, filter bson.Raw, skip, limit int64, hint bson.RawValue) (int64, error) {
	var n int64
	err := e.scanMatches(ctx, db, coll, filter, hint, func(bson.Raw) bool {
		if skip > 0 {
			skip--
			return true
		}
		n++
		return limit <= 0 || n < limit
	})
	return n, err
}

// Distinct returns the distinct values of key among matching documents,
// arrays contributing their elements, in BSON order.
func (e *Engine) Distinct(ctx context.Context, db, coll, key string, filter bson.Raw) ([]bsoncore.Value, error) {
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return nil, err
	}
	set := distinct.NewCollatedSet(key, collator)
	err = e.scanMatches(ctx, db, coll, filter, bson.RawValue{}, set.Add)
	if err != nil {
		return nil, err
	}
	return set.Values()
}

// DistinctOf is Distinct over documents the caller has, such as the
// output of a view's pipeline.
func DistinctOf(docs []bson.Raw, key string) ([]bsoncore.Value, error) {
	set := distinct.NewSet(key)
	for _, d := range docs {
		if !set.Add(d) {
			break
		}
	}
	return set.Values()
}
