package engine

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/namespace"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/mongoerr"
)

// checkViewLocked checks the definition v of a view of db before it is
// stored, as MongoDB does: the name it reads, its pipeline, and that the
// graph of views stays acyclic and at most MaxViewDepth deep. e.viewMu
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
	g := viewGraph{db: db, views: e.views, changed: v}
	return g.check()
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

// viewGraph is the graph of db's views with one definition changed: each
// view points at its viewOn and at every namespace its pipeline reads.
type viewGraph struct {
	db      string
	views   map[string]*View // by "db.name"; read only
	changed *View
}

func (g *viewGraph) view(name string) *View {
	if name == g.changed.Name {
		return g.changed
	}
	return g.views[nsKey(g.db, name)]
}

// refs lists the namespaces view v reads.
func (g *viewGraph) refs(v *View) []string {
	return append([]string{v.ViewOn}, involvedNamespaces(v.Pipeline)...)
}

// check finds cycles through the changed view and measures the longest
// chain of views through it, as MongoDB's ViewGraph does: the views below
// it down to a collection, and the views above it.
func (g *viewGraph) check() error {
	below, err := g.heightBelow(g.changed.Name, []string{g.changed.Name})
	if err != nil {
		return err
	}
	above, err := g.heightAbove(g.changed.Name, 0)
	if err != nil {
		return err
	}
	// Both heights count the changed view; below also counts the
	// collection at the bottom.
	if above+below-2 > MaxViewDepth {
		return errViewDepth()
	}
	return nil
}

func errViewDepth() error {
	return mongoerr.New(mongoerr.ViewDepthLimitExceeded, "View depth limit exceeded; maximum depth is %d", MaxViewDepth)
}

// heightBelow is the number of namespaces on the longest path from name
// down to one that is not a view; path is the way from the changed view.
func (g *viewGraph) heightBelow(name string, path []string) (int, error) {
	v := g.view(name)
	if v == nil {
		return 1, nil
	}
	if len(path) > MaxViewDepth+1 {
		return 0, errViewDepth()
	}
	most := 0
	for _, ref := range g.refs(v) {
		if ref == g.changed.Name {
			cycle := make([]string, 0, len(path)+1)
			for _, p := range append(path, ref) {
				cycle = append(cycle, nsKey(g.db, p))
			}
			return 0, mongoerr.New(mongoerr.GraphContainsCycle, "View cycle detected: %s", strings.Join(cycle, " => "))
		}
		h, err := g.heightBelow(ref, append(path, ref))
		if err != nil {
			return 0, err
		}
		most = max(most, h)
	}
	return most + 1, nil
}

// heightAbove is the number of views on the longest path up from name
// through the views that read it, name included.
func (g *viewGraph) heightAbove(name string, depth int) (int, error) {
	if depth > MaxViewDepth {
		return 0, errViewDepth()
	}
	most := 0
	seen := map[string]bool{}
	visit := func(p *View) error {
		if seen[p.Name] || p.Name == name && depth > 0 {
			return nil
		}
		for _, ref := range g.refs(p) {
			if ref == name {
				seen[p.Name] = true
				h, err := g.heightAbove(p.Name, depth+1)
				if err != nil {
					return err
				}
				most = max(most, h)
				return nil
			}
		}
		return nil
	}
	for ns, p := range g.views {
		if vdb, _, _ := strings.Cut(ns, "."); vdb != g.db || p.Name == g.changed.Name {
			continue
		}
		if err := visit(p); err != nil {
			return 0, err
		}
	}
	if name != g.changed.Name {
		if err := visit(g.changed); err != nil {
			return 0, err
		}
	}
	return most + 1, nil
}

// involvedNamespaces lists the collections and views a pipeline reads
// besides its source: those named by $lookup, $graphLookup and $unionWith,
// and by the pipelines inside them and inside $facet.
func involvedNamespaces(stages []bson.Raw) []string {
	var out []string
	var walk func(stages []bson.Raw)
	sub := func(v bson.RawValue) {
		arr, ok := v.ArrayOK()
		if !ok {
			return
		}
		vals, _ := arr.Values()
		var stages []bson.Raw
		for _, s := range vals {
			if d, ok := s.DocumentOK(); ok {
				stages = append(stages, d)
			}
		}
		walk(stages)
	}
	walk = func(stages []bson.Raw) {
		for _, st := range stages {
			name, arg, err := pipeline.StageOf(st)
			if err != nil {
				continue
			}
			switch name {
			case "$lookup", "$graphLookup":
				spec, _ := arg.DocumentOK()
				if from, ok := spec.Lookup("from").StringValueOK(); ok {
					out = append(out, from)
				}
				sub(spec.Lookup("pipeline"))
			case "$unionWith":
				if coll, ok := arg.StringValueOK(); ok {
					out = append(out, coll)
					continue
				}
				spec, _ := arg.DocumentOK()
				if coll, ok := spec.Lookup("coll").StringValueOK(); ok {
					out = append(out, coll)
				}
				sub(spec.Lookup("pipeline"))
			case "$facet":
				spec, _ := arg.DocumentOK()
				elems, _ := spec.Elements()
				for _, el := range elems {
					sub(el.Value())
				}
			}
		}
	}
	walk(stages)
	return out
}
