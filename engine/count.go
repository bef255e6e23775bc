package engine

import (
	"bytes"
	"context"
	"hash/maphash"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/query"
)

// scanMatches calls fn for each live document of db.coll that matches
// filter, in plan order, until fn returns false. A missing collection has
// none. doc is valid only during the call.
func (e *Engine) scanMatches(ctx context.Context, db, coll string, filter bson.Raw, hint bson.RawValue, fn func(doc bson.Raw) bool) error {
	f, err := query.CompileWith(filter, query.Options{Now: e.clock.Now()})
	if err != nil {
		return err
	}
	c := e.collection(db, coll)
	if c == nil {
		return nil
	}
	p, err := c.st().choosePlan(f, nil, hint)
	if err != nil {
		return err
	}
	c.usage.used(p, e.clock)
	sc := &scanner{e: e, coll: c, p: p}
	more := true
	for more && !sc.done {
		err := sc.next(ctx, func(d *storedDoc) (bool, error) {
			if f.Match(d.doc) {
				more = fn(d.doc)
			}
			return more, nil
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
	// Values are found again by a hash of their keys, so that only the
	// values are kept. They are one array of the reply, which MongoDB caps
	// at 16 MiB: counting them as they are found stops a scan that would
	// pass it.
	var out []bsoncore.Value
	seen := map[uint64][]int{} // indexes in out, by hash of key
	seed := maphash.MakeSeed()
	size, tooBig := 0, false
	var k, other []byte // reused
	err := e.scanMatches(ctx, db, coll, filter, bson.RawValue{}, func(doc bson.Raw) bool {
		vals := distinctValues(bsoncore.Document(doc), key)
	next:
		for _, v := range vals {
			if v.Type == bsoncore.TypeUndefined {
				continue
			}
			k = keycodec.Append(k[:0], v)
			h := maphash.Bytes(seed, k)
			for _, i := range seen[h] {
				if other = keycodec.Append(other[:0], out[i]); bytes.Equal(other, k) {
					continue next
				}
			}
			if size += 2 + len(strconv.Itoa(len(out))) + len(v.Data); size > maxDistinctBytes {
				tooBig = true
				return false
			}
			seen[h] = append(seen[h], len(out))
			out = append(out, bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)})
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if tooBig {
		return nil, mongoerr.New(17217, "distinct too big, 16mb cap")
	}
	sortValues(out)
	return out, nil
}
