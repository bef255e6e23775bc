package pipeline

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// lookupStage is $lookup: each document gets an array of the documents of
// another collection that join it, found by equality of localField and
// foreignField, by a sub-pipeline run with let variables bound to the
// document's values, or by both (the equality first).
type lookupStage struct {
	from     string // "" for a pipeline that makes its own documents
	as       []string
	local    []string // nil without the equality form
	foreign  string
	let      []letVar
	pipeline []bson.Raw // nil without the pipeline form
	// deterministic is set when the sub-pipeline's results depend only
	// on the let variables and the equality, and may be reused.
	deterministic bool
}

// letVar is one variable of a stage's let.
type letVar struct {
	name string
	ex   *expr.Expr
}

// maxLookupBytes bounds the documents one $lookup gathers for one input
// document, as MongoDB's internalLookupStageIntermediateDocumentMaxSizeBytes
// does.
const maxLookupBytes = 100 << 20

func compileLookup(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $lookup specification must be an Object")
	}
	s := &lookupStage{}
	var as, local, foreign string
	hasFrom, hasPipeline, hasLet := false, false, false
	var letDoc bson.Raw
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		switch key := el.Key(); key {
		case "pipeline":
			p, err := subPipeline(v)
			if err != nil {
				return nil, err
			}
			if err := allowedInside(p, "$lookup", 51047); err != nil {
				return nil, err
			}
			s.pipeline, hasPipeline = p, true
		case "let":
			doc, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'let: %s' must be an object, is type %s", v, values.TypeNameOf(v))
			}
			letDoc, hasLet = doc, true
		case "from":
			name, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup 'from' field must be a string, but found %s", values.TypeNameOf(v))
			}
			if err := checkCollName(c.opts.DB, name, "$lookup"); err != nil {
				return nil, err
			}
			s.from, hasFrom = name, true
		case "as", "localField", "foreignField":
			str, ok := v.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument '%s: %s' must be a string, found %s", key, v, values.TypeNameOf(v))
			}
			switch key {
			case "as":
				as = str
			case "localField":
				local = str
			default:
				foreign = str
			}
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "unknown argument to $lookup: %s", key)
		}
	}
	if !hasFrom && !startsWithDocuments(s.pipeline) {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup stage without explicit collection must have a pipeline with $documents as first stage")
	}
	if as == "" {
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'as' field for a $lookup")
	}
	switch {
	case hasPipeline && local == "" && foreign == "":
	case local == "" || foreign == "":
		if hasPipeline {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
		}
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	case !hasPipeline && hasLet:
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup with a 'let' argument must also specify 'pipeline'")
	}
	var err error
	if s.as, err = parsePath(as); err != nil {
		return nil, err
	}
	if local != "" {
		if s.local, err = parsePath(local); err != nil {
			return nil, err
		}
		if _, err = parsePath(foreign); err != nil {
			return nil, err
		}
		s.foreign = foreign
	}
	if s.let, err = c.letVars(letDoc); err != nil {
		return nil, err
	}
	if err := c.check(s.pipeline); err != nil {
		return nil, err
	}
	s.deterministic = deterministic(s.pipeline)
	return s, nil
}

// letVars compiles the variables of a stage's let.
func (c *compiler) letVars(doc bson.Raw) ([]letVar, error) {
	elems, _ := doc.Elements()
	vars := make([]letVar, 0, len(elems))
	for _, el := range elems {
		if err := expr.CheckVariableDefinition(el.Key()); err != nil {
			return nil, err
		}
		ex, err := c.expr(el.Value())
		if err != nil {
			return nil, err
		}
		vars = append(vars, letVar{name: el.Key(), ex: ex})
	}
	return vars, nil
}

// bind evaluates the variables of a let against doc.
func bind(ctx context.Context, vars []letVar, doc bson.Raw) (Vars, error) {
	if len(vars) == 0 {
		return nil, nil
	}
	out := make(Vars, len(vars))
	for _, lv := range vars {
		v, err := lv.ex.EvalContext(ctx, doc)
		if err != nil {
			return nil, err
		}
		out[lv.name] = bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
	}
	return out, nil
}

func (s *lookupStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	if r.opts.Catalog == nil {
		return nil, noCatalog("$lookup")
	}
	h := held{limit: out, n: int64(sizeOf(docs))}
	cache := newJoinCache()
	for j, d := range docs {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		found, err := s.join(r, d, cache)
		if err != nil {
			return nil, err
		}
		docs[j] = withField(d, s.as, arrayOfDocs(found))
		if err := h.add(len(docs[j]) - len(d)); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// flowing is $lookup over src one document at a time, each passed on
// with what joins it before the next is read; one cache of joins serves
// the whole stream.
func (s *lookupStage) flowing(r *run, src Source) Source {
	return func(fn func(bson.Raw) error) error {
		if r.opts.Catalog == nil {
			return noCatalog("$lookup")
		}
		cache := newJoinCache()
		return src(func(d bson.Raw) error {
			if err := r.ctx.Err(); err != nil {
				return err
			}
			found, err := s.join(r, d, cache)
			if err != nil {
				return err
			}
			return fn(withField(d, s.as, arrayOfDocs(found)))
		})
	}
}

// join finds the documents that join d.
func (s *lookupStage) join(r *run, d bson.Raw, cache *joinCache) ([]bson.Raw, error) {
	var match bson.Raw
	var key []byte
	if s.local != nil {
		match, key = equalityMatch(d, s.local, s.foreign)
	}
	if s.pipeline == nil {
		if found, ok := cache.get(key); ok {
			return found, nil
		}
		src, err := r.opts.Catalog.Find(r.ctx, r.opts.DB, s.from, match)
		if err != nil {
			return nil, err
		}
		found, err := gather(src, s.from)
		if err == nil {
			cache.put(key, found)
		}
		return found, err
	}
	vars, err := bind(r.ctx, s.let, d)
	if err != nil {
		return nil, err
	}
	if s.deterministic {
		key = varsKey(key, s.let, vars)
		if found, ok := cache.get(key); ok {
			return found, nil
		}
	}
	stages := s.pipeline
	if match != nil {
		// The equality comes first, after a $documents that makes the
		// documents it filters.
		n := 0
		if startsWithDocuments(stages) {
			n = 1
		}
		m, _ := bson.Marshal(bson.D{{Key: "$match", Value: match}})
		stages = append(append(append(make([]bson.Raw, 0, len(stages)+1), stages[:n]...), m), stages[n:]...)
	}
	found, err := r.opts.Catalog.Aggregate(r.ctx, r.opts.DB, s.from, stages, r.withNow(vars))
	if err != nil {
		return nil, err
	}
	if sizeOf(found) > maxLookupBytes {
		return nil, lookupTooLarge(s.from)
	}
	if s.deterministic {
		cache.put(key, found)
	}
	return found, nil
}

// varsKey extends the key of a join with the values of its variables, as
// they are: a sub-pipeline may tell 1 from 1.0 where an equality does not.
func varsKey(key []byte, let []letVar, vars Vars) []byte {
	for _, lv := range let {
		v := vars[lv.name]
		key = append(key, byte(v.Type))
		key = bsoncore.AppendInt32(key, int32(len(v.Data)))
		key = append(key, v.Data...)
	}
	return key
}

// deterministic reports whether a sub-pipeline gives the same documents
// for the same variables, so that its results may be reused: every stage
// but those that draw random numbers.
func deterministic(stages []bson.Raw) bool {
	for _, st := range stages {
		if drawsRandom(st) {
			return false
		}
	}
	return true
}

// drawsRandom reports whether a document or array names $rand, $sample
// or $sampleRate anywhere in it.
func drawsRandom(container []byte) bool {
	it := bsonvalue.ElementsOf(container)
	for name, v, ok := it.Next(); ok; name, v, ok = it.Next() {
		switch string(name) {
		case "$rand", "$sample", "$sampleRate":
			return true
		}
		if (v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray) && drawsRandom(v.Data) {
			return true
		}
	}
	return false
}

// gather reads the documents a join found, bounded as MongoDB bounds them.
func gather(src Source, from string) ([]bson.Raw, error) {
	var found []bson.Raw
	n := 0
	err := src(func(doc bson.Raw) error {
		if n += len(doc); n > maxLookupBytes {
			return lookupTooLarge(from)
		}
		found = append(found, doc)
		return nil
	})
	return found, err
}

func lookupTooLarge(from string) error {
	return mongoerr.New(mongoerr.Code(4568), "Total size of documents in %s matching pipeline's $lookup stage exceeds %d bytes", from, maxLookupBytes)
}

// equalityMatch is the query filter of the equality form of $lookup for
// d, and a key that identifies it: foreignField equal to the value of
// localField or to any of its values when it is an array or passes
// through one, null when it has none. A regular expression matches only
// an equal regular expression there, so the values are compared with $eq
// rather than $in when one of them is one.
func equalityMatch(d bson.Raw, local []string, foreign string) (bson.Raw, []byte) {
	var vals []bsoncore.Value
	regex := false
	valuesAtPath(d, local, func(v bsoncore.Value) {
		vals = append(vals, v)
		regex = regex || v.Type == bsoncore.TypeRegex
	})
	if len(vals) == 0 {
		vals = append(vals, values.Null)
	}
	var key []byte
	for _, v := range vals {
		key = keycodec.Append(key, v)
	}
	b := bsoncore.NewDocumentBuilder()
	switch {
	case len(vals) == 1:
		b.AppendDocument(foreign, bsoncore.NewDocumentBuilder().AppendValue("$eq", vals[0]).Build())
	case regex:
		or := bsoncore.NewArrayBuilder()
		for _, v := range vals {
			eq := bsoncore.NewDocumentBuilder().AppendValue("$eq", v).Build()
			or.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument(foreign, eq).Build())
		}
		b.AppendArray("$or", or.Build())
	default:
		in := bsoncore.NewArrayBuilder()
		for _, v := range vals {
			in.AppendValue(v)
		}
		b.AppendDocument(foreign, bsoncore.NewDocumentBuilder().AppendArray("$in", in.Build()).Build())
	}
	return bson.Raw(b.Build()), key
}

// joinCache keeps what a $lookup found by the values it looked for and
// the values of its variables, so that input documents that look for the
// same read the foreign collection once, within a bound on the bytes it
// keeps.
type joinCache struct {
	found map[string][]bson.Raw
	bytes int
}

const maxJoinCacheBytes = 16 << 20

func newJoinCache() *joinCache { return &joinCache{found: map[string][]bson.Raw{}} }

func (c *joinCache) get(key []byte) ([]bson.Raw, bool) {
	found, ok := c.found[string(key)]
	return found, ok
}

func (c *joinCache) put(key []byte, found []bson.Raw) {
	n := len(key) + sizeOf(found)
	if c.bytes+n > maxJoinCacheBytes {
		return
	}
	c.bytes += n
	c.found[string(key)] = found
}
