package engine

import (
	"bytes"
	"context"
	"hash/maphash"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// scanMatches calls fn for each live document of db.coll that matches
// filter, in plan order, until fn returns false. A missing collection has
// none. doc is valid only during the call.
func (e *Engine) scanMatches(ctx context.Context, db, coll string, filter bson.Raw, hint bson.RawValue, fn func(doc bson.Raw) bool) error {
	f, err := query.CompileWith(filter, query.Options{Now: e.clock.Now()})
	if err != nil {
		return err
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
	p, err := c.st().choosePlan(f, nil, hint)
	if err != nil {
		return err
	}
	p.countUse(&c.usage, e.clock)
	sc := &scanner{e: e, coll: c, p: p}
	more := true
	for more && !sc.done {
		err := sc.next(ctx, func(d *storedDoc) (bool, error) {
			matched, err := f.MatchErr(d.doc)
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

// maxDistinctBytes bounds the values distinct returns, as MongoDB's 16 MiB
// cap on its reply does.
const maxDistinctBytes = 16 << 20

// Distinct returns the distinct values of key among matching documents,
// arrays contributing their elements, in BSON order.
func (e *Engine) Distinct(ctx context.Context, db, coll, key string, filter bson.Raw) ([]bsoncore.Value, error) {
	set := newDistinctSet(key)
	err := e.scanMatches(ctx, db, coll, filter, bson.RawValue{}, set.add)
	if err != nil {
		return nil, err
	}
	return set.values()
}

// DistinctOf is Distinct over documents the caller has, such as the
// output of a view's pipeline.
func DistinctOf(docs []bson.Raw, key string) ([]bsoncore.Value, error) {
	set := newDistinctSet(key)
	for _, d := range docs {
		if !set.add(d) {
			break
		}
	}
	return set.values()
}

// distinctSet gathers the distinct values of a key. Values are found again
// by a hash of their keys, so that only the values are kept. They are one
// array of the reply, which MongoDB caps at 16 MiB: counting them as they
// are found stops a scan that would pass it.
type distinctSet struct {
	key    string
	out    []bsoncore.Value
	seen   map[uint64][]int // indexes in out, by hash of key
	seed   maphash.Seed
	size   int
	tooBig bool
	k, o   []byte // reused
}

func newDistinctSet(key string) *distinctSet {
	return &distinctSet{key: key, seen: map[uint64][]int{}, seed: maphash.MakeSeed()}
}

// add takes the values of doc; false when the values are too big.
func (s *distinctSet) add(doc bson.Raw) bool {
	vals := query.DistinctValues(bsoncore.Document(doc), s.key)
next:
	for _, v := range vals {
		if v.Type == bsoncore.TypeUndefined {
			continue
		}
		s.k = keycodec.Append(s.k[:0], v)
		h := maphash.Bytes(s.seed, s.k)
		for _, i := range s.seen[h] {
			if s.o = keycodec.Append(s.o[:0], s.out[i]); bytes.Equal(s.o, s.k) {
				continue next
			}
		}
		if s.size += 2 + len(strconv.Itoa(len(s.out))) + len(v.Data); s.size > maxDistinctBytes {
			s.tooBig = true
			return false
		}
		s.seen[h] = append(s.seen[h], len(s.out))
		s.out = append(s.out, bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)})
	}
	return true
}

func (s *distinctSet) values() ([]bsoncore.Value, error) {
	if s.tooBig {
		return nil, mongoerr.New(17217, "distinct too big, 16mb cap")
	}
	sortValues(s.out)
	return s.out, nil
}
