package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// unionWithStage is $unionWith: the documents of the stages before it,
// then those of a pipeline over another collection.
type unionWithStage struct {
	coll     string // "" for a pipeline that makes its own documents
	pipeline []bson.Raw
}

func compileUnionWith(c *compiler, name string, arg bson.RawValue) (stage, error) {
	s := &unionWithStage{}
	switch arg.Type {
	case bson.TypeString:
		s.coll = arg.StringValue()
	case bson.TypeEmbeddedDocument:
		hasColl := false
		elems, _ := arg.Document().Elements()
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "coll":
				coll, ok := v.StringValueOK()
				if !ok {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$unionWith.coll' is the wrong type '%s', expected type 'string'", values.TypeNameOf(v))
				}
				s.coll, hasColl = coll, true
			case "pipeline":
				if v.Type != bson.TypeArray {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", values.TypeNameOf(v))
				}
				p, err := subPipeline(v)
				if err != nil {
					return nil, err
				}
				if err := allowedInside(p, name, 31441); err != nil {
					return nil, err
				}
				if err := c.check(p); err != nil {
					return nil, err
				}
				s.pipeline = p
			default:
				return nil, mongoerr.New(mongoerr.Code(40415), "BSON field '$unionWith.%s' is an unknown field.", el.Key())
			}
		}
		if !hasColl {
			if !startsWithDocuments(s.pipeline) {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$unionWith stage without explicit collection must have a pipeline with $documents as first stage")
			}
			return s, nil
		}
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $unionWith stage specification must be an object or string, but found %s", values.TypeNameOf(arg))
	}
	if err := checkCollName(c.opts.DB, s.coll, name); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *unionWithStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	if r.opts.Catalog == nil {
		return nil, noCatalog("$unionWith")
	}
	more, err := r.opts.Catalog.Aggregate(r.ctx, r.opts.DB, s.coll, s.pipeline, r.withNow(nil))
	if err != nil {
		return nil, err
	}
	h := held{limit: out, n: int64(sizeOf(docs))}
	if err := h.add(sizeOf(more)); err != nil {
		return nil, err
	}
	return append(docs, more...), nil
}
