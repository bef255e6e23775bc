package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/viewdef"
	"github.com/lethedb/lethe/mongoerr"
)

// Views in the model test: views v1 and v2 over the collection c or over
// each other, made, changed and dropped at random, and read through with a
// filter, a sort and a limit. The model keeps its own definitions and
// answers a read by running the views' pipelines over the visible
// documents by brute force. Their stages are those it computes by hand:
// $match, $sort, $limit right after a $sort whose order is total, and
// $project of top-level fields that keeps _id.

var modelViewNames = []string{"v1", "v2"}

// viewOp makes a createView, modifyView, dropView or readView operation.
func (g *modelGen) viewOp(op *modelOp) {
	op.View = modelViewNames[g.r.Intn(len(modelViewNames))]
	switch k := g.r.Intn(12); {
	case k < 3:
		op.Kind = "createView"
		op.ViewOn = append([]string{modelColl}, modelViewNames...)[g.r.Intn(len(modelViewNames)+1)]
		op.ViewPipe = g.viewPipeline()
	case k < 4:
		op.Kind = "modifyView"
		op.ViewOn = append([]string{modelColl}, modelViewNames...)[g.r.Intn(len(modelViewNames)+1)]
		op.ViewPipe = g.viewPipeline()
	case k < 5:
		op.Kind = "dropView"
	default:
		op.Kind = "readView"
		op.Filter = modelRaw(bson.D{})
		if g.r.Intn(2) == 0 {
			op.Filter = g.filter()
		}
		if g.r.Intn(2) == 0 {
			op.Sort = g.sort()
			if _, err := op.Sort.LookupErr("_id"); err == nil && g.r.Intn(2) == 0 {
				op.Limit = int64(1 + g.r.Intn(4))
			}
		}
	}
}

func (g *modelGen) viewPipeline() []bson.Raw {
	p := []bson.Raw{}
	if g.r.Intn(3) == 0 {
		p = append(p, modelRaw(bson.D{{Key: "$match", Value: g.filter()}}))
	}
	if g.r.Intn(2) == 0 {
		s := g.sort()
		p = append(p, modelRaw(bson.D{{Key: "$sort", Value: s}}))
		if _, err := s.LookupErr("_id"); err == nil && g.r.Intn(2) == 0 {
			p = append(p, modelRaw(bson.D{{Key: "$limit", Value: int32(1 + g.r.Intn(4))}}))
		}
	}
	if g.r.Intn(3) == 0 {
		projs := []bson.D{{{Key: "a", Value: int32(1)}}, {{Key: "arr", Value: int32(0)}, {Key: "s", Value: int32(0)}}, {{Key: "u", Value: true}, {Key: "v", Value: int32(1)}, {Key: "d", Value: int32(1)}}}
		p = append(p, modelRaw(bson.D{{Key: "$project", Value: projs[g.r.Intn(len(projs))]}}))
	}
	return p
}

// readStages are a readView's stages after the views' pipelines.
func (op *modelOp) readStages() []bson.Raw {
	stages := []bson.Raw{modelRaw(bson.D{{Key: "$match", Value: op.Filter}})}
	if op.Sort != nil {
		stages = append(stages, modelRaw(bson.D{{Key: "$sort", Value: op.Sort}}))
	}
	if op.Limit > 0 {
		stages = append(stages, modelRaw(bson.D{{Key: "$limit", Value: op.Limit}}))
	}
	return stages
}

func (r *modelRun) stepView(ctx context.Context, op *modelOp) error {
	if r.views == nil {
		r.views = map[string]*View{}
	}
	switch op.Kind {
	case "createView":
		var err error
		if herr := r.guard("createView", func() { err = r.e.CreateView(ctx, modelDB, op.View, op.ViewOn, op.ViewPipe) }); herr != nil {
			return herr
		}
		werr := r.modelCreateView(op)
		r.counts[fmt.Sprintf("outcome.createView.%d", codeOf(werr))]++
		if codeOf(err) != codeOf(werr) {
			return fmt.Errorf("createView: engine error %v, model code %d", err, codeOf(werr))
		}
	case "modifyView":
		var err error
		if herr := r.guard("modifyView", func() { err = r.e.ModifyView(ctx, modelDB, op.View, op.ViewOn, op.ViewPipe) }); herr != nil {
			return herr
		}
		werr := r.modelModifyView(op)
		r.counts[fmt.Sprintf("outcome.modifyView.%d", codeOf(werr))]++
		if codeOf(err) != codeOf(werr) {
			return fmt.Errorf("modifyView: engine error %v, model code %d", err, codeOf(werr))
		}
	case "dropView":
		var existed bool
		var err error
		if herr := r.guard("dropView", func() { existed, err = r.e.DropView(ctx, modelDB, op.View) }); herr != nil {
			return herr
		}
		if err != nil || existed != (r.views[op.View] != nil) {
			return fmt.Errorf("dropView: engine (%v, %v), model existed %v", existed, err, r.views[op.View] != nil)
		}
		delete(r.views, op.View)
	case "readView":
		return r.stepReadView(ctx, op)
	}
	return nil
}

func (r *modelRun) modelCreateView(op *modelOp) error {
	if old := r.views[op.View]; old != nil {
		if old.ViewOn != op.ViewOn || !viewdef.SamePipeline(old.Pipeline, op.ViewPipe) {
			return refErr(mongoerr.NamespaceExists)
		}
		return nil
	}
	return r.modelDefineView(op)
}

// modelModifyView is collMod of a view with both viewOn and pipeline.
func (r *modelRun) modelModifyView(op *modelOp) error {
	if r.views[op.View] == nil {
		return refErr(mongoerr.NamespaceNotFound)
	}
	return r.modelDefineView(op)
}

// modelDefineView stores op's definition unless its pipeline does not
// compile or it closes a cycle.
func (r *modelRun) modelDefineView(op *modelOp) error {
	if _, _, err := modelPipeline(nil, op.ViewPipe); err != nil {
		return err
	}
	for on := op.ViewOn; ; {
		if on == op.View {
			return refErr(mongoerr.GraphContainsCycle)
		}
		v := r.views[on]
		if v == nil {
			break
		}
		on = v.ViewOn
	}
	r.views[op.View] = &View{Name: op.View, ViewOn: op.ViewOn, Pipeline: op.ViewPipe}
	return nil
}

func (r *modelRun) stepReadView(ctx context.Context, op *modelOp) error {
	var docs []bson.Raw
	var err error
	if herr := r.guard("readView", func() {
		coll, vp, _, rerr := r.e.ResolveView(ctx, modelDB, op.View)
		if err = rerr; err == nil {
			docs, err = r.e.Aggregate(ctx, modelDB, coll, append(vp, op.readStages()...), AggregateOptions{})
		}
	}); herr != nil {
		return herr
	}
	// The model's own resolution: the views' pipelines, innermost first,
	// over what the collection they end at shows.
	var stages []bson.Raw
	on := op.View
	for v := r.views[on]; v != nil; v = r.views[on] {
		stages = append(slices.Clone(v.Pipeline), stages...)
		on = v.ViewOn
	}
	var in []bson.Raw
	if on == modelColl {
		for _, d := range r.m.visible(r.now()) {
			in = append(in, d.doc)
		}
	}
	want, ordered, werr := modelPipeline(in, append(stages, op.readStages()...))
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("readView: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		return nil
	}
	if len(stages) > 0 && len(want) > 0 {
		r.counts["outcome.readView.found"]++
	}
	if ordered {
		if !slices.EqualFunc(docs, want, func(a, b bson.Raw) bool { return bytes.Equal(a, b) }) {
			return fmt.Errorf("readView: engine returned %s, model %s", rawList(docs), rawList(want))
		}
		return nil
	}
	if len(docs) != len(want) || !subMultiset(docs, want) {
		return fmt.Errorf("readView: engine returned %s, model %s (any order)", rawList(docs), rawList(want))
	}
	return nil
}

// modelPipeline runs the stages viewOp makes by brute force. ordered
// reports whether the output's order is fixed: the last sort includes
// _id, which every document keeps.
func modelPipeline(docs []bson.Raw, stages []bson.Raw) (out []bson.Raw, ordered bool, err error) {
	out = slices.Clone(docs)
	for _, st := range stages {
		el, _ := st.IndexErr(0)
		arg := el.Value()
		switch el.Key() {
		case "$match":
			f, err := query.Compile(arg.Document())
			if err != nil {
				return nil, false, err
			}
			out = slices.DeleteFunc(out, func(d bson.Raw) bool { return !f.Match(d) })
		case "$sort":
			s, err := query.CompileSort(arg.Document())
			if err != nil {
				return nil, false, err
			}
			slices.SortStableFunc(out, s.Compare)
			_, idErr := arg.Document().LookupErr("_id")
			ordered = idErr == nil
		case "$limit":
			if !ordered {
				return nil, false, fmt.Errorf("model: $limit of an unordered input")
			}
			out = out[:min(len(out), int(arg.AsInt64()))]
		case "$project":
			out = modelProject(out, arg.Document())
		default:
			return nil, false, fmt.Errorf("model: stage %s", el.Key())
		}
	}
	return out, ordered, nil
}

// modelProject applies an inclusion or exclusion of top-level fields that
// keeps _id: the fields stay in the document's order.
func modelProject(docs []bson.Raw, spec bson.Raw) []bson.Raw {
	elems, _ := spec.Elements()
	named := map[string]bool{}
	include := false
	for _, el := range elems {
		named[el.Key()] = true
		include = el.Value().Type == bson.TypeBoolean && el.Value().Boolean() || el.Value().Type != bson.TypeBoolean && el.Value().AsInt64() != 0
	}
	out := make([]bson.Raw, 0, len(docs))
	for _, d := range docs {
		b := bsoncore.NewDocumentBuilder()
		fields, _ := d.Elements()
		for _, f := range fields {
			if f.Key() == "_id" || named[f.Key()] == include {
				b.AppendValue(f.Key(), bsoncore.Value{Type: bsoncore.Type(f.Value().Type), Data: f.Value().Value})
			}
		}
		out = append(out, bson.Raw(b.Build()))
	}
	return out
}

// checkViews compares the engine's views with the model's.
func (r *modelRun) checkViews() error {
	describe := func(vs []View) string {
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = v.Name + " on " + v.ViewOn + " " + rawList(v.Pipeline)
		}
		return strings.Join(parts, "; ")
	}
	var want []View
	for _, name := range modelViewNames {
		if v := r.views[name]; v != nil {
			want = append(want, *v)
		}
	}
	if got := r.e.Views(context.Background(), modelDB); describe(got) != describe(want) {
		return fmt.Errorf("views: engine %s, model %s", describe(got), describe(want))
	}
	return nil
}
