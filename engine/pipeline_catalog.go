package engine

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/namespace"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/reclaim"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/engine/writestage"
	"github.com/lethedb/lethe/mongoerr"
)

// catalogReader is the store as the stages of package pipeline that read
// and write other collections see it: reads through the planner, writes
// through the normal write paths.
type catalogReader struct {
	e    *Engine
	opts AggregateOptions
}

func (c catalogReader) Find(ctx context.Context, db, coll string, filter bson.Raw) (pipeline.Source, error) {
	// A join into a view reads what the view shows: its pipeline, then
	// the filter, as MongoDB resolves a view in $lookup and $unionWith.
	source, viewStages, isView, err := c.e.ResolveView(db, coll)
	if err != nil {
		return nil, err
	}
	if isView {
		if filter != nil {
			match, err := bson.Marshal(bson.D{{Key: "$match", Value: filter}})
			if err != nil {
				return nil, fmt.Errorf("engine: a join's filter on view %s.%s: %w", db, coll, err)
			}
			viewStages = append(viewStages, match)
		}
		docs, err := c.Aggregate(ctx, db, source, viewStages, nil)
		if err != nil {
			return nil, err
		}
		return pipeline.Slice(docs), nil
	}
	cur, err := c.e.Find(ctx, db, coll, FindSpec{Filter: filter, AllowDiskUse: c.opts.AllowDiskUse})
	if err != nil {
		return nil, err
	}
	return cursorDocs(ctx, cur), nil
}

func (c catalogReader) Aggregate(ctx context.Context, db, coll string, stages []bson.Raw, vars pipeline.Vars) ([]bson.Raw, error) {
	if len(vars) > 0 {
		var err error
		if stages, err = letvars.Of(vars).Pipeline(stages); err != nil {
			return nil, err
		}
	}
	opts := AggregateOptions{AllowDiskUse: c.opts.AllowDiskUse, BypassDocumentValidation: c.opts.BypassDocumentValidation}
	if coll == "" {
		return c.e.AggregateDB(ctx, db, stages, opts)
	}
	source, viewStages, _, err := c.e.ResolveView(db, coll)
	if err != nil {
		return nil, err
	}
	return c.e.Aggregate(ctx, db, source, append(viewStages, stages...), opts)
}

// Out carries out $out (package writestage) through the engine's write
// paths.
func (c catalogReader) Out(ctx context.Context, db, coll string, docs []bson.Raw) error {
	return writestage.Out(ctx, stageWriter{e: c.e, bypass: c.opts.BypassDocumentValidation}, db, coll, docs)
}

// Merge carries out $merge (package writestage) through the engine's
// write paths.
func (c catalogReader) Merge(ctx context.Context, m *pipeline.Merge, docs []pipeline.MergeDoc) error {
	return writestage.Merge(ctx, stageWriter{e: c.e, bypass: c.opts.BypassDocumentValidation}, m, docs)
}

// stageWriter is the engine as $out and $merge write through it
// (writestage.Host); bypass skips the validators of the collections they
// write.
type stageWriter struct {
	e      *Engine
	bypass bool
}

func (w stageWriter) Insert(db, coll string, docs []bson.Raw) error {
	res, err := w.e.Insert(db, coll, docs, true, WriteOptions{BypassDocumentValidation: w.bypass})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return err
}

func (w stageWriter) Update(ctx context.Context, db, coll string, filter bson.Raw, u *update.Update, upsert bool) (int64, error) {
	res, err := w.e.Update(ctx, db, coll, UpdateSpec{Filter: filter, Update: u, Upsert: upsert, BypassDocumentValidation: w.bypass})
	return res.Matched, err
}

func (w stageWriter) Exists(ctx context.Context, db, coll string, filter bson.Raw) (bool, error) {
	cur, err := w.e.Find(ctx, db, coll, FindSpec{Filter: filter, Limit: 1})
	if err != nil {
		return false, err
	}
	docs, err := cur.All(ctx)
	return len(docs) > 0, err
}

func (w stageWriter) EnsureCollection(db, coll string, options bson.Raw) error {
	_, _, err := w.e.ensureCollection(db, coll, options)
	return err
}

func (w stageWriter) Target(db, coll string) (options bson.Raw, indexes []bson.Raw, err error) {
	target := w.e.collection(db, coll)
	if target == nil {
		return nil, nil, nil
	}
	st := target.st()
	for _, im := range st.meta.Indexes {
		spec, err := bson.Marshal(im.Spec())
		if err != nil {
			return nil, nil, fmt.Errorf("engine: $out: index %s: %w", im.Name, err)
		}
		indexes = append(indexes, spec)
	}
	return st.meta.Options, indexes, nil
}

func (w stageWriter) CreateIndexes(db, coll string, specs []bson.Raw) error {
	_, err := w.e.CreateIndexes(db, coll, specs)
	return err
}

func (w stageWriter) DropCollection(db, coll string) { _, _ = w.e.DropCollection(db, coll) }

func (w stageWriter) RenameOver(db, from, to string) error { return w.e.renameOver(db, from, to) }

func (w stageWriter) UniqueIndexOn(db, coll string, fields []string) bool {
	return w.e.uniqueIndexOn(db, coll, fields)
}

// renameOver renames db.from to db.to, dropping db.to if it exists, in one
// commit.
func (e *Engine) renameOver(db, from, to string) error {
	ranges, err := e.renameOverLocked(db, from, to)
	reclaim.Drop(context.TODO(), e.store, e.log, ranges)
	return err
}

// renameOverLocked is renameOver under the collections' locks; it returns
// the ranges of the target it dropped, to reclaim once they are released.
func (e *Engine) renameOverLocked(db, from, to string) ([]reclaim.Range, error) {
	if err := namespace.Validate(db, to); err != nil {
		return nil, err
	}
	if err := e.writable(); err != nil {
		return nil, err
	}
	src := e.collection(db, from)
	if src == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", db, from)
	}
	// The target is locked before the source: the source is a temporary
	// collection no other request knows, so no request takes the two in
	// the other order.
	dst := e.collection(db, to)
	if dst != nil {
		dst.ddl.Lock()
		defer dst.ddl.Unlock()
	}
	src.ddl.Lock()
	defer src.ddl.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.colls[nsKey(db, from)] != src || e.colls[nsKey(db, to)] != dst {
		return nil, mongoerr.New(mongoerr.Interrupted, "$out: the collection %s.%s was created, dropped or renamed while $out wrote it", db, to)
	}
	ranges, err := e.commitRename(src, dst, db, from, db, to)
	if err != nil {
		return nil, fmt.Errorf("engine: $out into %s.%s: %w", db, to, err)
	}
	return ranges, nil
}

// uniqueIndexOn reports whether db.coll has a unique index, not partial,
// whose fields are exactly fields, which makes $merge's on fields
// identify one document.
func (e *Engine) uniqueIndexOn(db, coll string, fields []string) bool {
	c := e.collection(db, coll)
	if c == nil {
		return false
	}
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	for _, im := range c.st().meta.Indexes {
		if !im.Unique || im.Partial != nil {
			continue
		}
		keys, _ := im.Key.Elements()
		if len(keys) != len(want) {
			continue
		}
		all := true
		for _, k := range keys {
			all = all && want[k.Key()]
		}
		if all {
			return true
		}
	}
	return false
}
