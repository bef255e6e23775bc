package engine

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
)

// scanMatches calls fn for each live document of db.coll that matches
// filter, in plan order, until fn returns false. A missing collection has
// none. doc is valid only during the call.
func (e *Engine) scanMatches(ctx context.Context, db, coll string, filter bson.Raw, hint bson.RawValue, fn func(doc bson.Raw) bool) error {
	f, err := query.Compile(filter)
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

// Distinct returns the distinct values of key among matching documents,
// arrays contributing their elements, in BSON order.
func (e *Engine) Distinct(ctx context.Context, db, coll, key string, filter bson.Raw) ([]bsoncore.Value, error) {
	seen := map[string]bsoncore.Value{}
	err := e.scanMatches(ctx, db, coll, filter, bson.RawValue{}, func(doc bson.Raw) bool {
		vals := distinctValues(bsoncore.Document(doc), key)
		for _, v := range vals {
			if v.Type == bsoncore.TypeUndefined {
				continue
			}
			k := string(keycodec.Append(nil, v))
			if _, ok := seen[k]; !ok {
				seen[k] = bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out := make([]bsoncore.Value, 0, len(seen))
	for _, v := range seen {
		out = append(out, v)
	}
	sortValues(out)
	return out, nil
}

func sortStableRaw(docs []bson.Raw, cmp func(a, b bson.Raw) int) {
	slices.SortStableFunc(docs, cmp)
}
