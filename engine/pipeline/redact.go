package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/mongoerr"
)

// redactStage is $redact: an expression decides, for the document and
// then each document within it, whether to keep it whole ($$KEEP), drop
// it ($$PRUNE) or keep its fields and decide again for the documents
// among them ($$DESCEND).
//
// The expression language does not know these three variables, so the
// stage writes each as a string constant before compiling, and reads the
// constants back from the results. The constants start with a NUL byte,
// which no string a user writes as a $literal in a pipeline is likely to.
type redactStage struct {
	ex *expr.Expr
}

// The variables, and the constants that stand for them.
const (
	redactKeep    = "$$KEEP"
	redactPrune   = "$$PRUNE"
	redactDescend = "$$DESCEND"
	redactMark    = "\x00"
)

func compileRedact(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	v := redactVariables(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
	ex, err := expr.CompileExprWith(v, expr.ExprOptions{Now: c.opts.Now, Collator: c.opts.Collator})
	if err != nil {
		return nil, err
	}
	return &redactStage{ex: ex}, nil
}

// redactVariables replaces the variables of $redact in an expression by
// literals of their names, leaving $literal's arguments alone.
func redactVariables(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeString:
		switch s := v.StringValue(); s {
		case redactKeep, redactPrune, redactDescend:
			lit := bsoncore.NewDocumentBuilder().AppendString("$literal", redactMark+s).Build()
			return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: lit}
		}
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		if v.Type == bsoncore.TypeEmbeddedDocument && bsonvalue.FirstKey(v.Data) == "$literal" {
			return v
		}
		b := bsoncore.NewDocumentBuilder()
		it := bsonvalue.ElementsOf(v.Data)
		for k, e, ok := it.Next(); ok; k, e, ok = it.Next() {
			b.AppendValue(string(k), redactVariables(e))
		}
		return bsoncore.Value{Type: v.Type, Data: b.Build()}
	}
	return v
}

func (s *redactStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	res := docs[:0]
	for _, d := range docs {
		red, keep, err := s.redact(r, d)
		if err != nil {
			return nil, err
		}
		if keep {
			res = append(res, red)
		}
	}
	return res, nil
}

// redact decides for one document; keep is false when it is pruned.
func (s *redactStage) redact(r *run, doc []byte) (bson.Raw, bool, error) {
	v, err := s.ex.EvalContext(r.ctx, doc)
	if err != nil {
		return nil, false, err
	}
	what, _ := v.StringValueOK()
	switch {
	case v.Type == bsoncore.TypeString && what == redactMark+redactKeep:
		return doc, true, nil
	case v.Type == bsoncore.TypeString && what == redactMark+redactPrune:
		return nil, false, nil
	case v.Type == bsoncore.TypeString && what == redactMark+redactDescend:
	default:
		return nil, false, mongoerr.New(17053, "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", v)
	}
	b := bsoncore.NewDocumentBuilder()
	it := bsonvalue.ElementsOf(doc)
	for k, e, ok := it.Next(); ok; k, e, ok = it.Next() {
		switch e.Type {
		case bsoncore.TypeEmbeddedDocument:
			sub, keep, err := s.redact(r, e.Data)
			if err != nil {
				return nil, false, err
			}
			if keep {
				b.AppendDocument(string(k), sub)
			}
		case bsoncore.TypeArray:
			arr, err := s.redactArray(r, e.Data)
			if err != nil {
				return nil, false, err
			}
			b.AppendArray(string(k), arr)
		default:
			b.AppendValue(string(k), e)
		}
	}
	return bson.Raw(b.Build()), true, nil
}

// redactArray decides for the documents of an array, and of the arrays
// within it.
func (s *redactStage) redactArray(r *run, arr []byte) ([]byte, error) {
	b := bsoncore.NewArrayBuilder()
	it := bsonvalue.ElementsOf(arr)
	for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
		switch e.Type {
		case bsoncore.TypeEmbeddedDocument:
			sub, keep, err := s.redact(r, e.Data)
			if err != nil {
				return nil, err
			}
			if keep {
				b.AppendDocument(sub)
			}
		case bsoncore.TypeArray:
			sub, err := s.redactArray(r, e.Data)
			if err != nil {
				return nil, err
			}
			b.AppendArray(sub)
		default:
			b.AppendValue(e)
		}
	}
	return b.Build(), nil
}
