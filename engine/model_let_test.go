package engine

import (
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/update"
)

// Command let in the model test: some filters read constants as $$name in
// their $expr, and some update pipelines in their expressions. The engine
// gets them as the server gives them, bound by Let's substitution; the
// model binds them its own way, wrapping each expression that may read
// them in {$let: {vars: <let>, in: <expression>}}, and leaves the
// evaluation to the expression language.

// let is a command's let: constants only, never a string that reads as a
// field path.
func (g *modelGen) let() bson.Raw {
	return modelRaw(bson.D{{Key: "lim", Value: g.num(g.r.Intn(5))}, {Key: "k", Value: []any{"x", "y", nil, g.num(g.r.Intn(3))}[g.r.Intn(4)]}})
}

// letFilter is a filter whose $expr reads the let's variables.
func (g *modelGen) letFilter() bson.Raw {
	expr := func(op, field, name string) bson.D {
		return bson.D{{Key: "$expr", Value: bson.D{{Key: op, Value: bson.A{"$" + field, "$$" + name}}}}}
	}
	switch g.r.Intn(4) {
	case 0:
		return modelRaw(expr("$lt", "u", "lim"))
	case 1:
		return modelRaw(bson.D{{Key: "$and", Value: bson.A{g.filter(), expr("$eq", "a", "k")}}})
	case 2:
		return modelRaw(expr("$gte", "v", "lim"))
	}
	return modelRaw(bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: "x"}}, expr("$eq", "u", "lim")}}})
}

// letPipeline is an update pipeline that reads the let's variables.
func (g *modelGen) letPipeline() []bson.Raw {
	var set bson.D
	switch g.r.Intn(3) {
	case 0:
		set = bson.D{{Key: "v", Value: "$$lim"}}
	case 1:
		set = bson.D{{Key: "a", Value: bson.D{{Key: "$add", Value: bson.A{"$$lim", 1}}}}}
	default:
		set = bson.D{{Key: "u", Value: bson.D{{Key: "$cond", Value: bson.A{bson.D{{Key: "$eq", Value: bson.A{"$a", "$$k"}}}, "$$lim", "$u"}}}}}
	}
	return []bson.Raw{modelRaw(bson.D{{Key: "$set", Value: set}})}
}

// maybeLet gives some operations a let, read by their filter and, for a
// pipeline update, by the pipeline.
func (g *modelGen) maybeLet(op *modelOp) {
	if g.r.Intn(6) != 0 {
		return
	}
	op.Let = g.let()
	op.Filter = g.letFilter()
	if op.Pipe != nil || op.Kind != "delete" && op.Kind != "find" && op.Kind != "aggregate" && !op.Remove && g.r.Intn(3) == 0 {
		op.Upd, op.Pipe = nil, g.letPipeline()
		op.Multi = false
	}
}

// letForms is op's filter and pipeline as the engine gets them (the
// variables substituted) and as the model reads them (wrapped in $let).
type letForms struct {
	engFilter, refFilter bson.Raw
	engPipe, refPipe     []bson.Raw
}

func (r *modelRun) letForms(op *modelOp) (letForms, error) {
	lf := letForms{refFilter: op.Filter, refPipe: op.Pipe}
	var err error
	if lf.engFilter, lf.engPipe, err = letBound(op, r.clock.Now()); err != nil || op.Let == nil {
		return lf, err
	}
	lf.refFilter = letWrapFilter(op.Filter, op.Let)
	lf.refPipe = nil
	for _, st := range op.Pipe {
		lf.refPipe = append(lf.refPipe, letWrapSet(st, op.Let))
	}
	return lf, nil
}

// letBound is op's filter and pipeline with its let's variables bound as
// the server binds them.
func letBound(op *modelOp, now time.Time) (bson.Raw, []bson.Raw, error) {
	if op.Let == nil {
		return op.Filter, op.Pipe, nil
	}
	lv, err := letvars.ParseLet(op.Let, now)
	if err != nil {
		return nil, nil, fmt.Errorf("let %v: %v", op.Let, err)
	}
	filter, err := lv.Filter(op.Filter)
	if err != nil {
		return nil, nil, fmt.Errorf("let %v in filter: %v", op.Let, err)
	}
	if op.Pipe == nil {
		return filter, nil, nil
	}
	pipe, err := lv.Pipeline(op.Pipe)
	if err != nil {
		return nil, nil, fmt.Errorf("let %v in pipeline: %v", op.Let, err)
	}
	return filter, pipe, nil
}

// letWrap is {$let: {vars: vars, in: v}}.
func letWrap(v bson.RawValue, vars bson.Raw) bson.D {
	return bson.D{{Key: "$let", Value: bson.D{{Key: "vars", Value: vars}, {Key: "in", Value: v}}}}
}

// letWrapFilter wraps the $expr of a filter, at its top or in its $and,
// $or and $nor, which is where the generator puts them.
func letWrapFilter(filter, vars bson.Raw) bson.Raw {
	elems, _ := filter.Elements()
	out := bson.D{}
	for _, el := range elems {
		var v any = el.Value()
		switch el.Key() {
		case "$expr":
			v = letWrap(el.Value(), vars)
		case "$and", "$or", "$nor":
			subs, _ := el.Value().Array().Values()
			var a bson.A
			for _, s := range subs {
				a = append(a, letWrapFilter(s.Document(), vars))
			}
			v = a
		}
		out = append(out, bson.E{Key: el.Key(), Value: v})
	}
	return modelRaw(out)
}

// letWrapSet wraps each field's expression of a $set stage.
func letWrapSet(stage, vars bson.Raw) bson.Raw {
	set, ok := stage.Lookup("$set").DocumentOK()
	if !ok {
		return stage
	}
	elems, _ := set.Elements()
	out := bson.D{}
	for _, el := range elems {
		out = append(out, bson.E{Key: el.Key(), Value: letWrap(el.Value(), vars)})
	}
	return modelRaw(bson.D{{Key: "$set", Value: out}})
}

// compileUpdateOf compiles op's update, or the pipeline given in its place.
// Its $addToSet, $pull, $min, $max and pipeline compare strings under
// the collation op names (model_collate_test.go).
func compileUpdateOf(op *modelOp, pipe []bson.Raw, now time.Time) (*update.Update, error) {
	coll, err := refCollator(op.Collation)
	if err != nil {
		return nil, err
	}
	if pipe != nil {
		return update.CompilePipeline(pipe, update.Options{Now: now, Collator: coll})
	}
	return update.Compile(op.Upd, update.Options{Now: now, Collator: coll})
}
