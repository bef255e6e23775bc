package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// MakesDocuments reports whether a stage makes its documents from nothing,
// so that a pipeline of a database ({aggregate: 1}) may start with it.
func MakesDocuments(raw bson.Raw) bool {
	name, _, err := StageOf(raw)
	return err == nil && name == "$documents"
}

// documentsStage is $documents: the documents of an expression evaluated
// once. MongoDB runs it as a $project of the value, an $unwind and a
// $replaceRoot, whose rules it follows: null and missing make no
// documents, a value that is not an array is one document.
type documentsStage struct {
	ex *expr.Expr
}

func compileDocuments(c *compiler, name string, arg bson.RawValue) (stage, error) {
	if !c.first {
		return nil, notFirst(name)
	}
	ex, err := c.expr(arg)
	if err != nil {
		return nil, err
	}
	return &documentsStage{ex: ex}, nil
}

// notFirst is the error of a stage that must come first and does not.
func notFirst(name string) error {
	return mongoerr.New(mongoerr.Code(40602), "%s is only valid as the first stage in a pipeline", name)
}

func (s *documentsStage) apply(r *run, _ []bson.Raw, out Limit) ([]bson.Raw, error) {
	v, err := s.ex.EvalContext(r.ctx, bson.Raw(values.EmptyDoc))
	if err != nil {
		return nil, err
	}
	var vals []bsoncore.Value
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
	case bsoncore.TypeArray:
		it := bsonvalue.ElementsOf(v.Data)
		for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
			vals = append(vals, e)
		}
	default:
		vals = []bsoncore.Value{v}
	}
	h := held{limit: out}
	docs := make([]bson.Raw, 0, len(vals))
	for _, e := range vals {
		doc, ok := e.DocumentOK()
		if !ok {
			return nil, newRootNotObject(e)
		}
		if err := h.add(len(doc)); err != nil {
			return nil, err
		}
		docs = append(docs, bson.Raw(append([]byte(nil), doc...)))
	}
	return docs, nil
}
