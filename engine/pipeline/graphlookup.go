package pipeline

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// graphLookupStage is $graphLookup: a breadth-first search of another
// collection from the values of startWith, following connectFromField of
// each document found to the documents whose connectToField equals it.
// Each document is found once, by its _id, which ends cycles.
type graphLookupStage struct {
	from       string
	as         []string
	startWith  *expr.Expr
	fromField  []string
	toField    string
	depthField []string // nil for none
	maxDepth   int64    // -1 for none
	restrict   bson.Raw // nil for none
}

// maxGraphBytes bounds what one search holds, as MongoDB's
// internalDocumentSourceGraphLookupMaxMemoryBytes does.
const maxGraphBytes = 100 << 20

func compileGraphLookup(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $graphLookup stage specification must be an object, but found %s", values.TypeNameOf(arg))
	}
	s := &graphLookupStage{maxDepth: -1}
	var as, fromField, depthField string
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		key := el.Key()
		switch key {
		case "startWith":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			s.startWith = ex
			continue
		case "maxDepth":
			if !isNumberArg(v) {
				return nil, mongoerr.New(mongoerr.Code(40100), "maxDepth must be numeric, found type: %s", values.TypeNameOf(v))
			}
			f, _ := v.AsFloat64OK()
			if v.Type == bson.TypeDecimal128 {
				d, _ := bsonvalue.DecimalRat(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
				f, _ = d.Float64()
			}
			n, ok := bsonvalue.IntegerValue(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value})
			if !ok {
				n = int64(math.Trunc(f))
			}
			if n < 0 || f < 0 {
				return nil, mongoerr.New(mongoerr.Code(40101), "maxDepth requires a nonnegative argument, found: %d", n)
			}
			if !ok {
				return nil, mongoerr.New(mongoerr.Code(40102), "maxDepth could not be represented as a long long: %d", n)
			}
			s.maxDepth = n
			continue
		case "restrictSearchWithMatch":
			doc, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Code(40185), "restrictSearchWithMatch must be an object, found %s", values.TypeNameOf(v))
			}
			if _, err := query.CompileWith(doc, query.Options{Now: c.opts.Now}); err != nil {
				return nil, err
			}
			s.restrict = doc
			continue
		case "from", "as", "connectFromField", "connectToField", "depthField":
			if v.Type != bson.TypeString {
				return nil, mongoerr.New(mongoerr.Code(40103), "expected string as argument for %s, found: %s", key, values.TypeNameOf(v))
			}
		default:
			return nil, mongoerr.New(mongoerr.Code(40104), "Unknown argument to $graphLookup: %s", key)
		}
		str := v.StringValue()
		switch key {
		case "from":
			if err := checkCollName(c.opts.DB, str, "$graphLookup"); err != nil {
				return nil, err
			}
			s.from = str
		case "as":
			as = str
		case "connectFromField":
			fromField = str
		case "connectToField":
			s.toField = str
		case "depthField":
			depthField = str
			if depthField == "" {
				return nil, mongoerr.New(mongoerr.Code(40352), "FieldPath cannot be constructed with empty string")
			}
		}
	}
	if s.from == "" || as == "" || s.startWith == nil || fromField == "" || s.toField == "" {
		return nil, mongoerr.New(mongoerr.Code(40105), "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.")
	}
	var err error
	if s.as, err = parsePath(as); err != nil {
		return nil, err
	}
	if s.fromField, err = parsePath(fromField); err != nil {
		return nil, err
	}
	if _, err = parsePath(s.toField); err != nil {
		return nil, err
	}
	if depthField != "" {
		if s.depthField, err = parsePath(depthField); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func isNumberArg(v bson.RawValue) bool {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		return true
	}
	return false
}

func (s *graphLookupStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	if r.opts.Catalog == nil {
		return nil, noCatalog("$graphLookup")
	}
	h := held{limit: out, n: int64(sizeOf(docs))}
	for j, d := range docs {
		start, err := s.startWith.EvalContext(r.ctx, d)
		if err != nil {
			return nil, err
		}
		found, err := s.search(r, start)
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

// frontier is a set of values to look for, in the order they came. As
// MongoDB's _frontier is a set under the aggregation's collation
// (document_source_graph_lookup.cpp), values equal under coll are one:
// the query for one finds what the query for any would.
type frontier struct {
	coll *collation.Collator
	keys map[string]bool
	vals []bsoncore.Value
}

func newFrontier(coll *collation.Collator) *frontier {
	return &frontier{coll: coll, keys: map[string]bool{}}
}

func (f *frontier) add(v bsoncore.Value) int {
	k := string(keycodec.Append(nil, f.coll.Key(v)))
	if f.keys[k] {
		return 0
	}
	f.keys[k] = true
	f.vals = append(f.vals, v)
	return len(k) + len(v.Data)
}

// search finds the documents reachable from start, in the order found.
func (s *graphLookupStage) search(r *run, start bsoncore.Value) ([]bson.Raw, error) {
	next := newFrontier(r.opts.Collator)
	held := 0
	if start.Type == bsoncore.TypeArray {
		it := bsonvalue.ElementsOf(start.Data)
		for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
			held += next.add(v)
		}
	} else if start.Type != 0 {
		held += next.add(start)
	}
	// A value looked for once, or one equal to it under the collation,
	// finds nothing new the second time: MongoDB's cache of what it
	// queried is keyed under the collation too. Documents are one by
	// their _id under the simple collation, as MongoDB's _visited is
	// (ValueComparator::kInstance): the collation never merges two
	// documents.
	queried := map[string]bool{}
	visited := map[string]bool{}
	var found []bson.Raw
	for depth := int64(0); s.maxDepth < 0 || depth <= s.maxDepth; depth++ {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		var look []bsoncore.Value
		for _, v := range next.vals {
			k := string(keycodec.Append(nil, r.opts.Collator.Key(v)))
			if !queried[k] {
				queried[k] = true
				look = append(look, v)
			}
		}
		if len(look) == 0 {
			break
		}
		next = newFrontier(r.opts.Collator)
		src, err := r.opts.Catalog.Find(r.ctx, r.opts.DB, s.from, s.match(look))
		if err != nil {
			return nil, err
		}
		err = src(func(doc bson.Raw) error {
			id, ok := bsonvalue.Lookup(doc, "_id")
			if !ok {
				return mongoerr.New(mongoerr.Code(40271), "Documents in the '%s.%s' namespace must contain an _id for de-duplication in $graphLookup", r.opts.DB, s.from)
			}
			k := string(keycodec.Append(nil, id))
			if visited[k] {
				return nil
			}
			visited[k] = true
			if s.depthField != nil {
				doc = withField(doc, s.depthField, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, depth)})
			}
			valuesAtPath(doc, s.fromField, func(v bsoncore.Value) { held += next.add(v) })
			found = append(found, doc)
			if held += len(k) + len(doc); held >= maxGraphBytes {
				return mongoerr.New(mongoerr.Code(40099), "$graphLookup reached maximum memory consumption")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// match is the filter of one step of the search: connectToField in the
// values looked for, within restrictSearchWithMatch. A query that looks
// for null would also match a missing or undefined field, which the
// search follows only where it looks for those exactly.
func (s *graphLookupStage) match(look []bsoncore.Value) bson.Raw {
	null, undefined := false, false
	in := bsoncore.NewArrayBuilder()
	for _, v := range look {
		null = null || v.Type == bsoncore.TypeNull
		undefined = undefined || v.Type == bsoncore.TypeUndefined
		in.AppendValue(v)
	}
	and := bsoncore.NewArrayBuilder()
	if s.restrict != nil {
		and.AppendDocument(s.restrict)
	}
	cond := func(op string, v bsoncore.Value) {
		and.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument(s.toField, bsoncore.NewDocumentBuilder().AppendValue(op, v).Build()).Build())
	}
	cond("$in", bsoncore.Value{Type: bsoncore.TypeArray, Data: in.Build()})
	if null || undefined {
		cond("$exists", bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}})
		other := "null"
		if null {
			other = "undefined"
		}
		if !(null && undefined) {
			not := bsoncore.NewDocumentBuilder().AppendString("$type", other).Build()
			cond("$not", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: not})
		}
	}
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendArray("$and", and.Build()).Build())
}
