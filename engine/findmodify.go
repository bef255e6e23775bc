package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/update"
)

// FindAndModifySpec is a findAndModify command.
type FindAndModifySpec struct {
	Filter, Sort, Fields bson.Raw
	Remove               bool
	Update               *update.Update
	New                  bool
	Upsert               bool
	Hint                 bson.RawValue
}

// FindAndModifyResult reports a findAndModify.
type FindAndModifyResult struct {
	Value           bson.Raw // nil when nothing matched (and no upsert with new)
	N               int64
	UpdatedExisting bool
	Upserted        bson.RawValue
}

// FindAndModify updates or removes the first matching document (by sort)
// and returns it as it was before, or after with New.
func (e *Engine) FindAndModify(ctx context.Context, db, coll string, spec FindAndModifySpec) (FindAndModifyResult, error) {
	var res FindAndModifyResult
	q, err := compileQuery(FindSpec{Filter: spec.Filter, Sort: spec.Sort, Projection: spec.Fields})
	if err != nil {
		return res, err
	}
	f, srt, proj := q.filter, q.sort, q.proj
	shape := func(doc bson.Raw) (bson.Raw, error) {
		if proj == nil || doc == nil {
			return doc, nil
		}
		return proj.Apply(doc, -1)
	}
	c, err := e.writeLock(db, coll, spec.Upsert && !spec.Remove)
	if c == nil || err != nil {
		return res, err
	}
	defer c.ddl.RUnlock()
	pks, err := e.candidates(ctx, c, f, srt, spec.Hint, 0)
	if err != nil {
		return res, err
	}
	w := e.newWriter(c)
	defer w.close()
	for _, pk := range pks {
		var before bson.Raw
		var after bson.Raw
		var change func(d *storedDoc, pos int) (bson.Raw, bool, error)
		if !spec.Remove {
			change = func(d *storedDoc, pos int) (bson.Raw, bool, error) {
				out, changed, err := spec.Update.ApplyContext(ctx, d.doc, pos)
				after = out
				return out, changed, err
			}
		}
		matched, _, err := w.modify(pk, f, change, &before)
		if err != nil {
			return res, err
		}
		if !matched {
			continue
		}
		if err := w.flush(); err != nil {
			return res, err
		}
		res.N = 1
		res.UpdatedExisting = !spec.Remove
		doc := before
		if spec.New && !spec.Remove {
			doc = after
		}
		res.Value, err = shape(doc)
		return res, err
	}
	if !spec.Upsert || spec.Remove {
		return res, nil
	}
	doc, err := spec.Update.ApplyUpsert(spec.Filter)
	if err != nil {
		return res, err
	}
	id, err := e.insertUpserted(c, doc)
	if err != nil {
		return res, err
	}
	res.N = 1
	res.Upserted = id
	if spec.New {
		cur, err := e.Find(ctx, db, coll, FindSpec{Filter: bson.Raw(bsonDoc("_id", id)), Limit: 1})
		if err != nil {
			return res, err
		}
		docs, err := cur.All(ctx)
		if err != nil || len(docs) == 0 {
			return res, err
		}
		res.Value, err = shape(docs[0])
	}
	return res, err
}

func bsonDoc(key string, v bson.RawValue) bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: key, Value: v}})
	return raw
}
