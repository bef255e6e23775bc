package viewdef

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/mongoerr"
)

// CheckGraph checks that db's views, with the definition changed added or
// replacing the one of its name, stay acyclic and at most MaxDepth deep,
// as MongoDB's ViewGraph does. views are all the views by "db.name", read
// only.
func CheckGraph(db string, views map[string]*View, changed *View) error {
	g := viewGraph{db: db, views: views, changed: changed}
	return g.check()
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
	return g.views[ns(g.db, name)]
}

// refs lists the namespaces view v reads.
func (g *viewGraph) refs(v *View) []string {
	return append([]string{v.ViewOn}, InvolvedNamespaces(v.Pipeline)...)
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
	if above+below-2 > MaxDepth {
		return errViewDepth()
	}
	return nil
}

func errViewDepth() error {
	return mongoerr.New(mongoerr.ViewDepthLimitExceeded, "View depth limit exceeded; maximum depth is %d", MaxDepth)
}

// heightBelow is the number of namespaces on the longest path from name
// down to one that is not a view; path is the way from the changed view.
func (g *viewGraph) heightBelow(name string, path []string) (int, error) {
	v := g.view(name)
	if v == nil {
		return 1, nil
	}
	if len(path) > MaxDepth+1 {
		return 0, errViewDepth()
	}
	most := 0
	for _, ref := range g.refs(v) {
		if ref == g.changed.Name {
			cycle := make([]string, 0, len(path)+1)
			for _, p := range append(path, ref) {
				cycle = append(cycle, ns(g.db, p))
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
	if depth > MaxDepth {
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

// InvolvedNamespaces lists the collections and views a pipeline reads
// besides its source: those named by $lookup, $graphLookup and $unionWith,
// and by the pipelines inside them and inside $facet.
func InvolvedNamespaces(stages []bson.Raw) []string {
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
