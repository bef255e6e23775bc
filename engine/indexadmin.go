package engine

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expiryscan"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// ListIndexes returns the index specifications of db.coll as listIndexes
// shows them, the _id index first.
func (e *Engine) ListIndexes(ctx context.Context, db, coll string) ([]bson.D, error) {
	c := e.collection(db, coll)
	if c == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, coll)
	}
	out := []bson.D{IDIndexSpec(c.st().meta.Options)}
	for _, im := range c.st().meta.Indexes {
		if im.Building {
			continue // listIndexes lists ready indexes only
		}
		out = append(out, im.Spec())
	}
	return out, nil
}

// DropIndexes drops indexes selected by "*" (all but _id), a name, a key
// pattern or a list of names. It returns the number of indexes before.
func (e *Engine) DropIndexes(ctx context.Context, db, coll string, which bson.RawValue) (int, error) {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	c := e.collection(db, coll)
	if c == nil {
		return 0, mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", db, coll)
	}
	h, err := e.lockForChange(ctx, c)
	if err != nil {
		return 0, err
	}
	defer h.unlock()
	st := c.st()
	before := 1 + len(st.meta.Indexes)
	drop := map[uint64]bool{}
	find := func(match func(im record.IndexMeta) bool, what string) error {
		for _, im := range st.meta.Indexes {
			if match(im) {
				drop[im.ID] = true
				return nil
			}
		}
		return mongoerr.New(mongoerr.IndexNotFound, "index not found with name [%s]", what)
	}
	byName := func(name string) error {
		if name == "_id_" {
			return mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
		}
		return find(func(im record.IndexMeta) bool { return im.Name == name }, name)
	}
	switch which.Type {
	case bson.TypeString:
		if which.StringValue() == "*" {
			for _, im := range st.meta.Indexes {
				drop[im.ID] = true
			}
		} else if err := byName(which.StringValue()); err != nil {
			return 0, err
		}
	case bson.TypeEmbeddedDocument:
		key := which.Document()
		if k, err := key.IndexErr(0); err == nil && k.Key() == "_id" && len(mustElems(key)) == 1 {
			return 0, mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
		}
		if err := find(func(im record.IndexMeta) bool { return string(im.Key) == string(key) }, key.String()); err != nil {
			return 0, mongoerr.New(mongoerr.IndexNotFound, "can't find index with key: %s", key.String())
		}
	case bson.TypeArray:
		vals, _ := which.Array().Values()
		for _, v := range vals {
			name, ok := v.StringValueOK()
			if !ok {
				return 0, mongoerr.New(mongoerr.TypeMismatch, "dropIndexes index names must be strings")
			}
			if err := byName(name); err != nil {
				return 0, err
			}
		}
	default:
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'dropIndexes.index' is the wrong type '%s', expected types '[string, object, array]'", which.Type)
	}
	// Documents already expired when the _ts index goes stay gone (TTL spec
	// rule 9): purge them under the old setting before it disappears.
	if st.ttl.Enabled {
		for _, im := range st.meta.Indexes {
			if drop[im.ID] && im.Key.Lookup(record.TSField).Type != 0 && im.ExpireAfter != nil {
				if err := e.purgeExpired(ctx, c, st); err != nil {
					return 0, err
				}
			}
		}
	}
	var dropped []record.IndexMeta
	var ranges []reclaim.Range
	err = e.updateMeta(ctx, c, true, func(meta *collMeta, tx kv.Txn) error {
		kept := meta.Indexes[:0]
		for _, im := range meta.Indexes {
			if drop[im.ID] {
				dropped = append(dropped, im)
			} else {
				kept = append(kept, im)
			}
		}
		meta.Indexes = kept
		for _, im := range dropped {
			lo, hi := record.IndexRange(im.ID)
			ranges = append(ranges, reclaim.Range{Lo: lo, Hi: hi})
		}
		return e.recordDrop(tx, ranges)
	}, func(old, _ *collMeta) []oplog.Entry {
		var ents []oplog.Entry
		for _, im := range dropped {
			ents = append(ents, cmdEntry(db, old.UUID.Data, bson.D{{Key: "dropIndexes", Value: coll}, {Key: "index", Value: im.Name}}, im.Spec())...)
		}
		return ents
	})
	if err != nil {
		return 0, err
	}
	e.reclaimDropped(ctx, ranges)
	return before, nil
}

// purgeExpired deletes every document of c expired under st's _ts setting now.
// The caller holds c.ddl exclusively.
func (e *Engine) purgeExpired(ctx context.Context, c *Collection, st *collState) error {
	nowMs := e.nowMillis()
	for {
		due, _, err := expiryscan.DueDocs(ctx, e.store, st.expiry(), nowMs, 1000, nil)
		if err != nil {
			return err
		}
		if len(due) == 0 {
			return nil
		}
		w := e.newWriter(ctx, c)
		n := 0
		for _, dd := range due {
			if _, err := w.lock(record.DocKey(nil, st.meta.ID, dd.PK)); err != nil {
				w.close()
				return err
			}
			d, err := w.load(dd.PK)
			if err != nil {
				w.close()
				return err
			}
			// Only what the _ts setting hides goes: documents due under a
			// date TTL index are visible until the reaper deletes them
			// (rule 20), and that index may be dropped in the same call.
			if d != nil && st.expired(d.h, nowMs) {
				if err := w.remove(d); err != nil {
					w.close()
					return err
				}
				n++
			}
		}
		if err := w.flush(); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// IndexChange is collMod's index argument.
type IndexChange struct {
	KeyPattern  bson.Raw
	Name        string
	ExpireAfter *bsoncore.Value
	Hidden      *bool
}

// CollModResult reports what collMod changed.
type CollModResult struct {
	OldExpireAfter *int32
	NewExpireAfter *int32
	OldHidden      *bool
	NewHidden      *bool
}

// CollModIndex changes the expireAfterSeconds of an index (TTL spec rules 8
// and 21). For the _ts index the change applies to every document at once:
// visibility reads the setting, so nothing is rewritten.
func (e *Engine) CollModIndex(ctx context.Context, db, coll string, ch IndexChange) (CollModResult, error) {
	// Every server has installed the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	var res CollModResult
	c := e.collection(db, coll)
	if c == nil {
		return res, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, coll)
	}
	h, err := e.lockForChange(ctx, c)
	if err != nil {
		return res, err
	}
	defer h.unlock()
	err = e.updateMeta(ctx, c, true, func(meta *collMeta, _ kv.Txn) error {
		for i := range meta.Indexes {
			im := &meta.Indexes[i]
			if (ch.Name != "" && im.Name == ch.Name) || (ch.KeyPattern != nil && string(im.Key) == string(ch.KeyPattern)) {
				if ch.Hidden != nil {
					old := im.Hidden
					res.OldHidden, res.NewHidden = &old, ch.Hidden
					im.Hidden = *ch.Hidden
				}
				if ch.ExpireAfter == nil {
					return nil
				}
				keys := mustElems(im.Key)
				if len(keys) == 1 && keys[0].Key() == record.TSField && im.ExpireAfter == nil {
					return mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds field to update")
				}
				n, err := parseExpireAfter(keys, *ch.ExpireAfter)
				if err != nil {
					if me, ok := mongoerr.As(err); ok && me.Code == mongoerr.CannotCreateIndex {
						me.Code = mongoerr.InvalidOptions
					}
					return err
				}
				res.OldExpireAfter = im.ExpireAfter
				im.ExpireAfter = &n
				res.NewExpireAfter = &n
				return nil
			}
		}
		return mongoerr.New(mongoerr.IndexNotFound, "cannot find index %s for ns %s.%s", indexDesc(ch), db, coll)
	}, func(old, _ *collMeta) []oplog.Entry {
		var oldExpire *int32
		if res.NewExpireAfter != nil {
			oldExpire = res.OldExpireAfter
		}
		return cmdEntry(db, old.UUID.Data, collModIndexCmd(coll, ch), collModO2(old, oldExpire))
	})
	return res, err
}

func indexDesc(ch IndexChange) string {
	if ch.Name != "" {
		return ch.Name
	}
	return ch.KeyPattern.String()
}

// TTLSetting reports a collection's _ts TTL setting.
func (e *Engine) TTLSetting(ctx context.Context, db, coll string) ttlindex.Setting {
	if c := e.collection(db, coll); c != nil {
		return c.st().ttl
	}
	return ttlindex.Setting{}
}
