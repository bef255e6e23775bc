package update

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/project"
	"github.com/lethedb/lethe/mongoerr"
)

// stage is one stage of an update pipeline.
type stage interface {
	apply(ctx context.Context, doc bson.Raw) (bson.Raw, error)
}

// otherStages are the pipeline stages MongoDB knows but does not run in an
// update.
var otherStages = map[string]bool{
	"$bucket": true, "$bucketAuto": true, "$changeStream": true, "$collStats": true, "$count": true,
	"$currentOp": true, "$densify": true, "$documents": true, "$facet": true, "$geoNear": true,
	"$graphLookup": true, "$group": true, "$indexStats": true, "$limit": true, "$listLocalSessions": true,
	"$listSessions": true, "$lookup": true, "$match": true, "$merge": true, "$out": true,
	"$planCacheStats": true, "$redact": true, "$sample": true, "$search": true, "$searchMeta": true,
	"$setWindowFields": true, "$skip": true, "$sort": true, "$sortByCount": true, "$unionWith": true,
	"$unwind": true,
}

// CompilePipeline compiles an update given as an aggregation pipeline, the
// array form of an update's u: each matched document is replaced by what
// the stages make of it. The stages an update may use are $addFields and
// its other name $set, $project, $unset, $replaceRoot and $replaceWith.
// Options.Now is the value of $$NOW; array filters are refused, as MongoDB
// does for pipelines. The update keeps its own copy of the stages.
func CompilePipeline(stages []bson.Raw, opts Options) (*Update, error) {
	if len(opts.ArrayFilters) > 0 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "arrayFilters may not be specified for pipeline-style updates")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	pipeline := make([]stage, 0, len(stages))
	for _, raw := range stages {
		s, err := compileStage(raw, now, opts.Collator)
		if err != nil {
			return nil, err
		}
		pipeline = append(pipeline, s)
	}
	return &Update{pipeline: pipeline, now: opts.Now}, nil
}

func compileStage(raw bson.Raw, now time.Time, coll *collation.Collator) (stage, error) {
	if err := bsoncore.Document(raw).Validate(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid pipeline stage: %v", err)
	}
	elems, _ := bsoncore.Document(raw).Elements()
	if len(elems) != 1 {
		return nil, mongoerr.New(mongoerr.Code(40323), "A pipeline stage specification object must contain exactly one field.")
	}
	name, spec := elems[0].Key(), elems[0].Value()
	switch name {
	case "$addFields", "$set":
		doc, ok := spec.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Code(40272), "%s specification stage must be an object, got %s", name, typeName(spec.Type))
		}
		p, err := project.CompileAddFields(bson.Raw(doc), project.Options{Now: now, Collator: coll})
		return projectStage{p}, err
	case "$project":
		doc, ok := spec.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Code(15969), "$project specification must be an object")
		}
		p, err := project.CompileProject(bson.Raw(doc), project.Options{Now: now, Collator: coll})
		return projectStage{p}, err
	case "$unset":
		p, err := project.CompileUnset(spec)
		return projectStage{p}, err
	case "$replaceWith":
		return compileReplaceRoot("'replacement document'", spec, now, coll)
	case "$replaceRoot":
		return compileReplaceRootStage(spec, now, coll)
	case "$fill":
		return nil, mongoerr.New(mongoerr.NotImplemented, "$fill is not supported by Lethe")
	}
	if otherStages[name] {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "%s is not allowed to be used within an update", name)
	}
	return nil, mongoerr.New(mongoerr.Code(40324), "Unrecognized pipeline stage name: '%s'", name)
}

// projectStage is $project, $addFields, $set or $unset.
type projectStage struct {
	p *project.Projection
}

func (s projectStage) apply(ctx context.Context, doc bson.Raw) (bson.Raw, error) {
	return s.p.ApplyContext(ctx, doc, -1)
}

// replaceRoot is $replaceRoot or $replaceWith: the document an expression
// evaluates to.
type replaceRoot struct {
	what    string // how errors name the expression
	newRoot *expr.Expr
}

func compileReplaceRootStage(spec bsoncore.Value, now time.Time, coll *collation.Collator) (stage, error) {
	doc, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(40229), "expected an object as specification for $replaceRoot stage, got %s", typeName(spec.Type))
	}
	elems, _ := doc.Elements()
	var newRoot bsoncore.Value
	for _, e := range elems {
		if e.Key() != "newRoot" {
			return nil, mongoerr.New(mongoerr.Code(40415), "BSON field '$replaceRoot.%s' is an unknown field.", e.Key())
		}
		newRoot = e.Value()
	}
	if newRoot.Type == 0 {
		return nil, mongoerr.New(mongoerr.Code(40231), "no newRoot specified for the $replaceRoot stage")
	}
	return compileReplaceRoot("'newRoot' expression", newRoot, now, coll)
}

func compileReplaceRoot(what string, v bsoncore.Value, now time.Time, coll *collation.Collator) (stage, error) {
	e, err := expr.CompileExprWith(v, expr.ExprOptions{Now: now, Collator: coll})
	if err != nil {
		return nil, err
	}
	return replaceRoot{what: what, newRoot: e}, nil
}

func (r replaceRoot) apply(ctx context.Context, doc bson.Raw) (bson.Raw, error) {
	v, err := r.newRoot.EvalContext(ctx, doc)
	if err != nil {
		return nil, err
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		shown, kind := "MISSING", "missing"
		if v.Type != 0 {
			shown, kind = v.String(), typeName(v.Type)
		}
		return nil, mongoerr.New(mongoerr.Code(40228), "%s must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s",
			r.what, shown, kind, doc)
	}
	return bson.Raw(v.Data), nil
}

// run passes doc through the stages of a pipeline update.
func (u *Update) run(ctx context.Context, doc bson.Raw) (bson.Raw, error) {
	for _, s := range u.pipeline {
		var err error
		if doc, err = s.apply(ctx, doc); err != nil {
			return nil, err
		}
	}
	return doc, nil
}
