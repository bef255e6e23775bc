package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/namespace"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/engine/viewdef"
	"github.com/lethedb/lethe/mongoerr"
)

// Views are stored as MongoDB stores them: one document per view,
// {_id: "db.view", viewOn, pipeline}, in the database's system.views
// collection, which therefore lists, finds and survives restarts like any
// collection. Engine.views mirrors those documents in memory so that a
// name is resolved without a read; every change of it (create, collMod,
// drop, a drop of system.views) holds Engine.viewMu from the check to the
// write of the document, and swaps the map entry under Engine.mu, where
// collection creation looks too, so that no name is both a collection and
// a view.

// View is the definition of a view (viewdef.View).
type View = viewdef.View

// ViewsCollection is the collection of each database that holds the
// definitions of its views (viewdef.Collection).
const ViewsCollection = viewdef.Collection

// MaxViewDepth is how many views a read may go through, as in MongoDB
// (viewdef.MaxDepth).
const MaxViewDepth = viewdef.MaxDepth

func errIsView(db, name string) error {
	return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", db, name)
}

// isViewLocked reports whether db.name is a view. e.mu must be held.
func (e *Engine) isViewLocked(db, name string) bool { return e.views[nsKey(db, name)] != nil }

// View returns the definition of the view db.name.
func (e *Engine) View(ctx context.Context, db, name string) (View, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	v := e.views[nsKey(db, name)]
	if v == nil {
		return View{}, false
	}
	return *v, true
}

// Views lists db's views in name order.
func (e *Engine) Views(ctx context.Context, db string) []View {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []View
	for ns, v := range e.views {
		if vdb, _, _ := strings.Cut(ns, "."); vdb == db {
			out = append(out, *v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ResolveView follows db.name through views to the collection it reads:
// it returns that collection and the pipeline of every view on the way,
// innermost first, with isView false when db.name is not a view. As in
// MongoDB, a read goes through at most MaxViewDepth views.
func (e *Engine) ResolveView(ctx context.Context, db, name string) (coll string, pipeline []bson.Raw, isView bool, err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	coll = name
	for depth := 0; depth < MaxViewDepth; depth++ {
		v := e.views[nsKey(db, coll)]
		if v == nil {
			return coll, pipeline, depth > 0, nil
		}
		coll = v.ViewOn
		pipeline = append(slices.Clip(v.Pipeline), pipeline...)
	}
	return "", nil, true, mongoerr.New(mongoerr.ViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", MaxViewDepth)
}

// CreateView creates the view db.name of pipeline over db.viewOn, which
// need not exist. Creating a view again with the same definition does
// nothing, as in MongoDB 7; any other existing collection or view of that
// name is NamespaceExists.
func (e *Engine) CreateView(ctx context.Context, db, name, viewOn string, pipeline []bson.Raw) error {
	return e.CreateViewCollated(ctx, db, name, viewOn, pipeline, nil)
}

// CreateViewCollated is CreateView with the view's collation, as create
// gives it (nil for none; checked and normalised here).
func (e *Engine) CreateViewCollated(ctx context.Context, db, name, viewOn string, pipeline []bson.Raw, collation bson.Raw) error {
	// Every server has the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	if err := namespace.Validate(db, name); err != nil {
		return err
	}
	coll, err := e.viewCollation(ctx, db, name, viewOn, collation)
	if err != nil {
		return err
	}
	if strings.HasPrefix(name, "system.") {
		return mongoerr.New(mongoerr.InvalidNamespace, "invalid namespace name for a view: %s.%s", db, name)
	}
	v := &View{Name: name, ViewOn: viewOn, Pipeline: viewdef.ClonePipeline(pipeline), Collation: coll}
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	if old, ok := e.View(ctx, db, name); ok {
		switch {
		case old.ViewOn != viewOn:
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but is a view on %s.%s rather than %s.%s", db, name, db, old.ViewOn, db, viewOn)
		case !viewdef.SamePipeline(old.Pipeline, pipeline):
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but with a different pipeline", db, name)
		case string(old.Collation) != string(coll):
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but with different options", db, name)
		}
		return nil
	}
	if e.CollectionExists(ctx, db, name) {
		return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but with different options", db, name)
	}
	if err := e.checkViewLocked(db, v); err != nil {
		return err
	}
	// The name is taken under e.mu, where collection creation checks it,
	// before the definition is written.
	e.mu.Lock()
	if e.colls[nsKey(db, name)] != nil {
		e.mu.Unlock()
		return mongoerr.New(mongoerr.NamespaceExists, "namespace %s.%s already exists, but with different options", db, name)
	}
	e.views[nsKey(db, name)] = v
	e.mu.Unlock()
	doc, err := viewdef.Document(db, v)
	if err == nil {
		var res InsertResult
		res, err = e.Insert(ctx, db, ViewsCollection, []bson.Raw{doc}, true, WriteOptions{BypassDocumentValidation: true})
		if err == nil && len(res.Errors) > 0 {
			err = res.Errors[0].Err
		}
	}
	if err != nil {
		e.mu.Lock()
		delete(e.views, nsKey(db, name))
		e.mu.Unlock()
		return fmt.Errorf("engine: create view %s.%s: %w", db, name, err)
	}
	return e.viewsChanged(ctx)
}

// ModifyView changes the view db.name (collMod): viewOn when it is not
// empty, the pipeline when it is not nil.
func (e *Engine) ModifyView(ctx context.Context, db, name, viewOn string, pipeline []bson.Raw) error {
	// Every server has the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	old, ok := e.View(ctx, db, name)
	if !ok {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist")
	}
	v := &old
	if viewOn != "" {
		v.ViewOn = viewOn
	}
	if pipeline != nil {
		v.Pipeline = viewdef.ClonePipeline(pipeline)
	}
	if err := e.checkViewLocked(db, v); err != nil {
		return err
	}
	doc, err := viewdef.Document(db, v)
	if err != nil {
		return err
	}
	up, err := update.Compile(doc, update.Options{Now: e.clock.Now()})
	if err != nil {
		return fmt.Errorf("engine: modify view %s.%s: %w", db, name, err)
	}
	filter, _ := bson.Marshal(bson.D{{Key: "_id", Value: nsKey(db, name)}})
	if _, err := e.Update(ctx, db, ViewsCollection, UpdateSpec{Filter: filter, Update: up, Upsert: true, BypassDocumentValidation: true}); err != nil {
		return fmt.Errorf("engine: modify view %s.%s: %w", db, name, err)
	}
	e.mu.Lock()
	e.views[nsKey(db, name)] = v
	e.mu.Unlock()
	return e.viewsChanged(ctx)
}

// DropView removes the view db.name and reports whether it existed. Views
// defined on it stay, reading a namespace that no longer exists.
func (e *Engine) DropView(ctx context.Context, db, name string) (bool, error) {
	// Every server has the change before the reply (cluster.go).
	defer e.awaitCatalog(ctx)
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	if _, ok := e.View(ctx, db, name); !ok {
		return false, nil
	}
	filter, _ := bson.Marshal(bson.D{{Key: "_id", Value: nsKey(db, name)}})
	if _, err := e.Delete(ctx, db, ViewsCollection, filter, 1, bson.RawValue{}); err != nil {
		return false, fmt.Errorf("engine: drop view %s.%s: %w", db, name, err)
	}
	e.mu.Lock()
	delete(e.views, nsKey(db, name))
	e.mu.Unlock()
	return true, e.viewsChanged(ctx)
}

// dropViewsCollection drops db.system.views, and with it every view of db,
// as MongoDB does.
func (e *Engine) dropViewsCollection(db string) (bool, error) {
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	existed, err := e.dropCollection(db, ViewsCollection)
	if err != nil {
		return existed, err
	}
	e.mu.Lock()
	for ns := range e.views {
		if vdb, _, _ := strings.Cut(ns, "."); vdb == db {
			delete(e.views, ns)
		}
	}
	e.mu.Unlock()
	return existed, e.viewsChanged(context.Background())
}

// loadViews reads every database's system.views into memory. A definition
// that does not parse is left out, and logged.
func (e *Engine) loadViews() error { return e.loadViewsInto(e.views) }

// loadViewsInto reads the views of system.views into views.
func (e *Engine) loadViewsInto(views map[string]*View) error {
	ctx := context.Background()
	for _, c := range e.openCollections() {
		st := c.st()
		if st.meta.Name != ViewsCollection {
			continue
		}
		cur, err := e.Find(ctx, st.meta.DB, ViewsCollection, FindSpec{})
		if err != nil {
			return fmt.Errorf("engine: read %s: %w", st.ns(), err)
		}
		docs, err := cur.All(ctx)
		if err != nil {
			return fmt.Errorf("engine: read %s: %w", st.ns(), err)
		}
		for _, doc := range docs {
			v, err := viewdef.Parse(st.meta.DB, doc)
			if err != nil {
				e.log.Warn("view definition is invalid and left out", zap.String("namespace", st.ns()), zap.Error(err))
				continue
			}
			views[nsKey(st.meta.DB, v.Name)] = v
		}
	}
	return nil
}

// checkViewLocked checks the definition v of a view of db before it is
// stored, as MongoDB does: the name it reads, its pipeline, and that the
// graph of views stays acyclic and at most viewdef.MaxDepth deep. e.viewMu
// must be held, so that the graph checked is the one the definition
// joins.
func (e *Engine) checkViewLocked(db string, v *View) error {
	if v.ViewOn == "" {
		return mongoerr.New(mongoerr.BadValue, "'viewOn' cannot be empty")
	}
	if err := namespace.Validate(db, v.ViewOn); err != nil {
		return err
	}
	if err := e.checkViewPipeline(v.Pipeline); err != nil {
		if me, ok := mongoerr.As(err); ok {
			return mongoerr.New(me.Code, "Invalid pipeline for view %s.%s :: caused by :: %s", db, v.Name, me.Msg)
		}
		return err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	return viewdef.CheckGraph(db, e.views, v)
}

// checkViewPipeline refuses what a view may not hold, then compiles the
// pipeline by running it over no documents.
func (e *Engine) checkViewPipeline(stages []bson.Raw) error {
	for i, st := range stages {
		name, arg, err := pipeline.StageOf(st)
		if err != nil {
			return err
		}
		switch name {
		case "$out", "$merge":
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "The aggregation stage %s in location %d of the pipeline cannot be used in the view definition because it writes to disk", name, i)
		case "$changeStream":
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "$changeStream cannot be used in a view definition")
		case "$documents":
			return mongoerr.New(mongoerr.InvalidNamespace, "'%s' cannot be used in a view definition", name)
		case "$match":
			if _, ok := arg.DocumentOK(); !ok {
				return mongoerr.New(15959, "the match filter must be an expression in an object")
			}
		case "$sort":
			if _, ok := arg.DocumentOK(); !ok {
				return mongoerr.New(15973, "the $sort key specification must be an object")
			}
		}
	}
	_, err := e.ApplyStages(context.Background(), nil, stages)
	return err
}

// viewsChanged, on a store shared by several servers, advances the
// catalog's version after a change of system.views, so that the others
// read their views again (reloadViews); the caller holds viewMu.
func (e *Engine) viewsChanged(ctx context.Context) error {
	if e.cluster.member == nil {
		return nil
	}
	tx, err := e.beginCatalog(ctx, true)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		return fmt.Errorf("engine: advance the catalog's version: %w", err)
	}
	return nil
}

// reloadViews reads the views of every database again, after another
// server changed the catalog.
func (e *Engine) reloadViews() error {
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	views := make(map[string]*View)
	if err := e.loadViewsInto(views); err != nil {
		return err
	}
	e.mu.Lock()
	e.views = views
	e.mu.Unlock()
	return nil
}
