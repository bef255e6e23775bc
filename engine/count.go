package engine

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
)

// Count counts live documents matching filter after skip, up to limit
// (0: no limit). Expired documents are never counted (TTL spec rule 17).
func (e *Engine) Count(db, coll string, filter bson.Raw, skip, limit int64, hint bson.RawValue) (int64, error) {
	f, err := query.Compile(filter)
	if err != nil {
		return 0, err
	}
	c := e.collection(db, coll)
	if c == nil {
		return 0, nil
	}
	p, err := c.st().choosePlan(f, nil, hint)
	if err != nil {
		return 0, err
	}
	sc := &scanner{e: e, coll: c, p: p}
	var n int64
	for !sc.done {
		err := sc.next(func(d *storedDoc) (bool, error) {
			if !f.Match(d.doc) {
				return true, nil
			}
			if skip > 0 {
				skip--
				return true, nil
			}
			n++
			return limit <= 0 || n < limit, nil
		})
		if err != nil {
			return 0, err
		}
		if limit > 0 && n >= limit {
			break
		}
	}
	return n, nil
}

// Distinct returns the distinct values of key among matching documents,
// arrays contributing their elements, in BSON order.
func (e *Engine) Distinct(db, coll, key string, filter bson.Raw) ([]bsoncore.Value, error) {
	f, err := query.Compile(filter)
	if err != nil {
		return nil, err
	}
	c := e.collection(db, coll)
	if c == nil {
		return nil, nil
	}
	p, err := c.st().choosePlan(f, nil, bson.RawValue{})
	if err != nil {
		return nil, err
	}
	sc := &scanner{e: e, coll: c, p: p}
	seen := map[string]bsoncore.Value{}
	for !sc.done {
		err := sc.next(func(d *storedDoc) (bool, error) {
			if !f.Match(d.doc) {
				return true, nil
			}
			vals, _ := indexValues(bsoncore.Document(d.doc), key)
			for _, v := range vals {
				if v.Type == bsoncore.TypeUndefined {
					continue
				}
				k := string(keycodec.Append(nil, v))
				if _, ok := seen[k]; !ok {
					seen[k] = bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
				}
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
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
