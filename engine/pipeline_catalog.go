package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/namespace"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/reclaim"
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

// Out writes docs to a temporary collection made like db.coll, with its
// options and indexes, and renames it over db.coll in one commit, so that
// readers see the old documents or the new ones and a failure leaves the
// old ones, as MongoDB's $out does.
func (c catalogReader) Out(ctx context.Context, db, coll string, docs []bson.Raw) error {
	e := c.e
	var options bson.Raw
	var indexes []bson.Raw
	if target := e.collection(db, coll); target != nil {
		st := target.st()
		options = st.meta.Options
		for _, im := range st.meta.Indexes {
			spec, err := bson.Marshal(im.Spec())
			if err != nil {
				return fmt.Errorf("engine: $out: index %s: %w", im.Name, err)
			}
			indexes = append(indexes, spec)
		}
	}
	tmp := tempName()
	if _, _, err := e.ensureCollection(db, tmp, options); err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_, _ = e.DropCollection(db, tmp)
		}
	}()
	if len(indexes) > 0 {
		if _, err := e.CreateIndexes(db, tmp, indexes); err != nil {
			return err
		}
	}
	for start := 0; start < len(docs); {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Batches of at most 16 MiB, as a client would insert them.
		end, n := start, 0
		for end < len(docs) && (end == start || n+len(docs[end]) <= 16<<20) {
			n += len(docs[end])
			end++
		}
		res, err := e.Insert(ctx, db, tmp, docs[start:end], true, WriteOptions{BypassDocumentValidation: c.opts.BypassDocumentValidation})
		if err != nil {
			return err
		}
		if len(res.Errors) > 0 {
			return res.Errors[0].Err
		}
		start = end
	}
	if err := e.renameOver(db, tmp, coll); err != nil {
		return err
	}
	renamed = true
	return nil
}

// tempName is the name of a temporary collection of $out, as MongoDB
// names them.
func tempName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "tmp.agg_out." + hex.EncodeToString(b[:])
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
