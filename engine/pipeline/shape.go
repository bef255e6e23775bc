package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/project"
	"github.com/lethedb/lethe/mongoerr"
)

// shapeStage is one of the stages that reshape each document: $project,
// $addFields (or $set) and $unset.
type shapeStage struct {
	p *project.Projection
}

func compileShape(c *compiler, name string, arg bson.RawValue) (stage, error) {
	opts := project.Options{Now: c.opts.Now, Collator: c.opts.Collator}
	var p *project.Projection
	var err error
	if name == "$unset" {
		p, err = project.CompileUnset(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
	} else {
		spec, ok := arg.DocumentOK()
		switch {
		case !ok && name == "$project":
			return nil, mongoerr.New(mongoerr.Code(15969), "%s specification must be an object", name)
		case !ok:
			return nil, mongoerr.New(mongoerr.Code(40272), "%s specification stage must be an object, got %s", name, values.TypeName(bsoncore.Value{Type: bsoncore.Type(arg.Type)}))
		case name == "$project":
			p, err = project.CompileProject(spec, opts)
		default:
			p, err = project.CompileAddFields(spec, opts)
		}
	}
	if err != nil {
		return nil, err
	}
	return &shapeStage{p: p}, nil
}

func (s *shapeStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	h := held{limit: out, n: int64(sizeOf(docs))}
	for j, d := range docs {
		var err error
		if docs[j], err = s.p.ApplyContext(r.ctx, d, -1); err != nil {
			return nil, err
		}
		if err := h.add(len(docs[j]) - len(d)); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// replaceRootStage is $replaceRoot or $replaceWith: each document becomes
// the value of an expression.
type replaceRootStage struct {
	ex *expr.Expr
}

func compileReplaceRoot(c *compiler, name string, arg bson.RawValue) (stage, error) {
	v := bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value}
	if name == "$replaceRoot" {
		spec, ok := arg.DocumentOK()
		nr, err := spec.LookupErr("newRoot")
		if !ok || err != nil {
			return nil, mongoerr.New(mongoerr.Code(40231), "no newRoot specified for the $replaceRoot stage")
		}
		v = bsoncore.Value{Type: bsoncore.Type(nr.Type), Data: nr.Value}
	}
	ex, err := expr.CompileExprWith(v, expr.ExprOptions{Now: c.opts.Now, Collator: c.opts.Collator})
	if err != nil {
		return nil, err
	}
	return &replaceRootStage{ex: ex}, nil
}

func (s *replaceRootStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	h := held{limit: out, n: int64(sizeOf(docs))}
	for j, d := range docs {
		v, err := s.ex.EvalContext(r.ctx, d)
		if err != nil {
			return nil, err
		}
		doc, ok := v.DocumentOK()
		if !ok {
			return nil, newRootNotObject(v)
		}
		if err := h.add(len(doc) - len(d)); err != nil {
			return nil, err
		}
		docs[j] = append(bson.Raw(nil), doc...)
	}
	return docs, nil
}

// newRootNotObject is the error of a new root that is not a document.
func newRootNotObject(v bsoncore.Value) error {
	what := "missing"
	if v.Type != 0 {
		what = bsonvalue.TypeName(v.Type)
	}
	return mongoerr.New(mongoerr.Code(40228), "'newRoot' expression must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'.", v, what)
}
