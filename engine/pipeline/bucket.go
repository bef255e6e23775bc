package pipeline

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// bucketStage is $bucket: a group for each range between boundaries, and
// one for the default, in the order of their _id.
type bucketStage struct {
	groupBy    *expr.Expr
	boundaries []bsoncore.Value
	def        bsoncore.Value // Type 0: no default
	accs       []accField
}

// groupByExpr compiles the groupBy of $bucket or $bucketAuto: a field
// path or an operator expression.
func (c *compiler) groupByExpr(v bson.RawValue, code mongoerr.Code, stage string) (*expr.Expr, error) {
	ok := false
	switch v.Type {
	case bson.TypeString:
		s := v.StringValue()
		ok = len(s) > 0 && s[0] == '$'
	case bson.TypeEmbeddedDocument:
		k := bsonvalue.FirstKey(v.Value)
		ok = len(k) > 0 && k[0] == '$'
	}
	if !ok {
		return nil, specError(code, "The %s 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s", stage, v)
	}
	return c.expr(v)
}

// outputAccs compiles the output of $bucket or $bucketAuto; without one,
// each bucket counts its documents.
func (c *compiler) outputAccs(v bson.RawValue) ([]accField, error) {
	if v.Type == 0 {
		one, _ := bson.Marshal(bson.D{{Key: "$sum", Value: int32(1)}})
		a, err := c.accumulator("count", bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: one})
		return []accField{a}, err
	}
	elems, _ := v.Document().Elements()
	var accs []accField
	for _, el := range elems {
		a, err := c.accumulator(el.Key(), el.Value())
		if err != nil {
			return nil, err
		}
		accs = append(accs, a)
	}
	return accs, nil
}

func compileBucket(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(40201, "Argument to $bucket stage must be an object, but found type: %s", bsonvalue.TypeName(bsoncore.Type(arg.Type)))
	}
	s := &bucketStage{}
	var groupBy, boundaries, output bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "groupBy":
			groupBy = el.Value()
		case "boundaries":
			boundaries = el.Value()
		case "default":
			v := el.Value()
			s.def = bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
		case "output":
			output = el.Value()
			if output.Type != bson.TypeEmbeddedDocument {
				return nil, specError(40196, "The $bucket 'output' field must be an object, but found type: %s", bsonvalue.TypeName(bsoncore.Type(output.Type)))
			}
		default:
			return nil, specError(40197, "Unrecognized option to $bucket: %s.", el.Key())
		}
	}
	if groupBy.Type == 0 || boundaries.Type == 0 {
		return nil, specError(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	arr, ok := boundaries.ArrayOK()
	if !ok {
		return nil, specError(40200, "The $bucket 'boundaries' field must be an array, but found type: %s.", bsonvalue.TypeName(bsoncore.Type(boundaries.Type)))
	}
	vals, _ := arr.Values()
	if len(vals) < 2 {
		return nil, specError(40192, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(vals))
	}
	for i, v := range vals {
		b := bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
		if i > 0 {
			prev := s.boundaries[i-1]
			if keycodec.TypeClass(prev.Type) != keycodec.TypeClass(b.Type) {
				return nil, specError(40193, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", bsonvalue.TypeName(prev.Type), bsonvalue.TypeName(b.Type))
			}
			if c.opts.Collator.Compare(prev, b) >= 0 {
				return nil, specError(40194, "The 'boundaries' option to $bucket must be sorted, but elements %d and %d are not in ascending order (%s is not less than %s).", i-1, i, prev, b)
			}
		}
		s.boundaries = append(s.boundaries, b)
	}
	if s.def.Type != 0 && keycodec.TypeClass(s.def.Type) == keycodec.TypeClass(s.boundaries[0].Type) &&
		c.opts.Collator.Compare(s.def, s.boundaries[0]) >= 0 && c.opts.Collator.Compare(s.def, s.boundaries[len(vals)-1]) < 0 {
		return nil, specError(40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	var err error
	if s.groupBy, err = c.groupByExpr(groupBy, 40202, "$bucket"); err != nil {
		return nil, err
	}
	if s.accs, err = c.outputAccs(output); err != nil {
		return nil, err
	}
	return s, nil
}

func (*bucketStage) blocks() {}

func (s *bucketStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	gr := newGrouper(s.accs, r.blocking(groupExceeded), r.opts.Collator)
	n := len(s.boundaries)
	for j, d := range docs {
		if j%256 == 255 && r.ctx.Err() != nil {
			return nil, r.ctx.Err()
		}
		v, err := s.groupBy.EvalContext(r.ctx, d)
		if err != nil {
			return nil, err
		}
		// The bucket is the last boundary not above v, if v is below the
		// last boundary; values compare in BSON order, as $bucket's $gte
		// and $lt do, strings under the collation.
		coll := r.opts.Collator
		i, _ := slices.BinarySearchFunc(s.boundaries, v, func(b, v bsoncore.Value) int {
			if v.Type == 0 {
				return 1
			}
			return coll.Compare(b, v)
		})
		exact := v.Type != 0 && i < n && coll.Compare(s.boundaries[i], v) == 0
		var id bsoncore.Value
		switch {
		case exact && i < n-1:
			id = s.boundaries[i]
		case !exact && v.Type != 0 && i > 0 && i < n:
			id = s.boundaries[i-1]
		case s.def.Type != 0:
			id = s.def
		default:
			return nil, mongoerr.New(40066, "$switch could not find a matching branch for an input, and no default was specified.")
		}
		if err := gr.add(r.ctx, id, d); err != nil {
			return nil, err
		}
	}
	out, err := gr.results()
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b bson.Raw) int {
		x, _ := bsonvalue.Lookup(a, "_id")
		y, _ := bsonvalue.Lookup(b, "_id")
		return r.opts.Collator.Compare(x, y)
	})
	return out, nil
}

// sortByCountStage is $sortByCount: a $group counting the documents of
// each value of an expression, most frequent first.
type sortByCountStage struct {
	group *groupStage
}

func compileSortByCount(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	switch arg.Type {
	case bson.TypeEmbeddedDocument:
		if k := bsonvalue.FirstKey(arg.Value); len(k) == 0 || k[0] != '$' {
			return nil, specError(40147, "the sortByCount field must be defined as a $-prefixed path or an expression inside an object")
		}
	case bson.TypeString:
		if s := arg.StringValue(); len(s) == 0 || s[0] != '$' {
			return nil, specError(40148, "the sortByCount field must be defined as a $-prefixed path or an expression")
		}
	default:
		return nil, specError(40149, "the sortByCount field must be specified as a string or as an object")
	}
	id, err := c.expr(arg)
	if err != nil {
		return nil, err
	}
	one, _ := bson.Marshal(bson.D{{Key: "$sum", Value: int32(1)}})
	count, err := c.accumulator("count", bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: one})
	if err != nil {
		return nil, err
	}
	return &sortByCountStage{group: &groupStage{id: id, accs: []accField{count}}}, nil
}

func (*sortByCountStage) blocks() {}

func (s *sortByCountStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	return s.stream(r, Slice(docs))
}

func (s *sortByCountStage) stream(r *run, src Source) ([]bson.Raw, error) {
	out, err := s.group.stream(r, src)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b bson.Raw) int {
		x, _ := bsonvalue.Lookup(a, "count")
		y, _ := bsonvalue.Lookup(b, "count")
		return keycodec.Compare(y, x)
	})
	return out, nil
}
