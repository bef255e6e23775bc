package pipeline

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// facetStage is $facet: several pipelines over the same documents, whose
// outputs become the arrays of one document.
type facetStage struct {
	names     []string
	pipelines [][]stage
}

// notInFacet are the stages a $facet's pipelines may not hold: those that
// must come first, read or write collections, or are $facet themselves.
var notInFacet = map[string]bool{
	"$collStats": true, "$facet": true, "$geoNear": true, "$indexStats": true,
	"$out": true, "$merge": true, "$planCacheStats": true, "$search": true,
	"$searchMeta": true, "$changeStream": true, "$currentOp": true,
	"$listLocalSessions": true, "$listSessions": true, "$documents": true,
}

// maxFacetBytes bounds the document $facet makes while it builds it, as
// MongoDB's internalQueryFacetMaxOutputDocSizeBytes does; the document
// must still fit in 16 MiB to be returned.
const maxFacetBytes = 100 << 20

func compileFacet(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	elems, _ := spec.Elements()
	if !ok || len(elems) == 0 {
		return nil, specError(40169, "the $facet specification must be a non-empty object, but found: %s", arg)
	}
	s := &facetStage{}
	sub := &compiler{opts: c.opts}
	for _, el := range elems {
		name := el.Key()
		if err := bsonvalue.CheckFieldName(name); err != nil {
			return nil, err
		}
		if strings.Contains(name, ".") {
			return nil, specError(16412, "FieldPath field names may not contain '.'.")
		}
		arr, ok := el.Value().ArrayOK()
		if !ok {
			return nil, specError(40170, "arguments to $facet must be arrays, %s is type %s", name, bsonvalue.TypeName(bsoncore.Type(el.Value().Type)))
		}
		vals, _ := arr.Values()
		var p []stage
		for _, v := range vals {
			doc, ok := v.DocumentOK()
			if !ok {
				return nil, specError(40171, "elements of arrays in $facet spec must be non-empty objects, %s argument contained an element of type %s: %s", name, bsonvalue.TypeName(bsoncore.Type(v.Type)), v)
			}
			if st, _, err := StageOf(doc); err == nil && notInFacet[st] {
				return nil, specError(40600, "%s is not allowed to be used within a $facet stage", st)
			}
			st, err := sub.stage(doc)
			if err != nil {
				return nil, err
			}
			p = append(p, st)
		}
		s.names = append(s.names, name)
		s.pipelines = append(s.pipelines, p)
	}
	return s, nil
}

func (*facetStage) blocks() {}

func (s *facetStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	// Each pipeline reads the documents into a slice of its own: stages
	// reorder and replace the elements of their slice, never the bytes of
	// its documents.
	doc, err := s.run(r, Slice(docs))
	if err != nil {
		return nil, err
	}
	return []bson.Raw{doc}, nil
}

// spill keeps the input in a spill.Spool, in memory within the spill
// budget and on disk past it, from which each pipeline reads it in turn,
// its own blocking stages spilling as they would at the head of a
// pipeline. MongoDB feeds its pipelines batch by batch instead, from a
// buffer of 100 MiB; reading the input once per pipeline holds no more and
// keeps each pipeline's run whole.
func (s *facetStage) spill(r *run, src Source) (_ Source, err error) {
	sp := spill.NewSpool(r.opts.Scratch, r.spillBudget())
	defer func() {
		if cerr := sp.Close(); err == nil {
			err = cerr
		}
	}()
	if err := src(func(d bson.Raw) error { return sp.Add(r.ctx, d) }); err != nil {
		return nil, err
	}
	doc, err := s.run(r, func(fn func(bson.Raw) error) error {
		return sp.Each(r.ctx, func(rec []byte) error { return fn(rec) })
	})
	if err != nil {
		return nil, err
	}
	return Slice([]bson.Raw{doc}), nil
}

// run runs each pipeline over src and makes the document of their
// outputs.
func (s *facetStage) run(r *run, src Source) (bson.Raw, error) {
	b := bsoncore.NewDocumentBuilder()
	size := 5
	for i, p := range s.pipelines {
		res, err := r.stages(p, src)
		if err != nil {
			return nil, err
		}
		arr := bsoncore.NewArrayBuilder()
		for _, d := range res {
			if size += len(d) + 8; size > maxFacetBytes {
				return nil, mongoerr.New(4031700, "document constructed by $facet is %d bytes, which exceeds the limit of %d bytes", size, maxFacetBytes)
			}
			arr.AppendDocument(d)
		}
		b.AppendArray(s.names[i], arr.Build())
	}
	return bson.Raw(b.Build()), nil
}
