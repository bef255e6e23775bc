package pipeline

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/accum"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// groupStage is $group.
type groupStage struct {
	id   *expr.Expr
	accs []accField
}

// accField is one output field of a $group and its accumulator.
type accField struct {
	field string
	op    string
	new   func() accum.Accumulator
}

func compileGroup(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15947), "a group's fields must be specified in an object")
	}
	elems, _ := spec.Elements()
	g := &groupStage{}
	for _, el := range elems {
		if el.Key() == "_id" {
			ex, err := c.expr(el.Value())
			if err != nil {
				return nil, err
			}
			g.id = ex
			continue
		}
		a, err := c.accumulator(el.Key(), el.Value())
		if err != nil {
			return nil, err
		}
		g.accs = append(g.accs, a)
	}
	if g.id == nil {
		return nil, mongoerr.New(mongoerr.Code(15955), "a group specification must include an _id")
	}
	return g, nil
}

// accumulator compiles the accumulator {op: arg} of a $group's field.
func (c *compiler) accumulator(field string, v bson.RawValue) (accField, error) {
	d, ok := v.DocumentOK()
	ops, _ := d.Elements()
	if !ok || len(ops) != 1 {
		return accField{}, mongoerr.New(mongoerr.Code(40234), "The field '%s' must be an accumulator object", field)
	}
	op, arg := ops[0].Key(), ops[0].Value()
	if !accum.Has(op) {
		return accField{}, mongoerr.New(mongoerr.Code(15952), "unknown group operator '%s'", op)
	}
	if arg.Type == bson.TypeArray {
		return accField{}, mongoerr.New(mongoerr.Code(40237), "The %s accumulator is a unary operator", op)
	}
	newAcc, err := accum.Compile(op, arg, c.expr)
	if err != nil {
		return accField{}, err
	}
	return accField{field: field, op: op, new: newAcc}, nil
}

// expr compiles an expression of a stage.
func (c *compiler) expr(v bson.RawValue) (*expr.Expr, error) {
	return expr.CompileExprWith(bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}, expr.ExprOptions{Now: c.opts.Now, Collator: c.opts.Collator})
}

func (*groupStage) blocks() {}

func (g *groupStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	return g.stream(r, Slice(docs))
}

// group is the state of one group.
type group struct {
	id   bsoncore.Value
	accs []accum.Accumulator
}

// grouper gathers documents into groups by a key and runs the
// accumulators of each group; what it holds counts against a limit.
type grouper struct {
	accs   []accField
	groups map[string]*group
	order  []string
	h      held
	key    []byte              // the key being looked up, reused
	coll   *collation.Collator // ids equal under it are one group
}

func newGrouper(accs []accField, limit Limit, coll *collation.Collator) *grouper {
	return &grouper{accs: accs, groups: map[string]*group{}, h: held{limit: limit}, coll: coll}
}

// add adds doc to the group of id, which it may keep.
func (g *grouper) add(ctx context.Context, id bsoncore.Value, doc bson.Raw) error {
	g.key = keycodec.Append(g.key[:0], g.coll.Key(id))
	gr := g.groups[string(g.key)]
	if gr == nil {
		k := string(g.key)
		gr = &group{id: values.Own(id, doc), accs: make([]accum.Accumulator, len(g.accs))}
		if err := startAccs(ctx, gr.accs, g.accs, id); err != nil {
			return err
		}
		g.groups[k] = gr
		g.order = append(g.order, k)
		if err := g.h.add(len(k) + len(id.Data)); err != nil {
			return err
		}
	}
	for _, a := range gr.accs {
		grew, err := a.Add(ctx, doc)
		if err == nil {
			err = g.h.add(grew)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startAccs makes the accumulators of a group.
func startAccs(ctx context.Context, accs []accum.Accumulator, fields []accField, id bsoncore.Value) error {
	for i, a := range fields {
		accs[i] = a.new()
		if err := accum.Start(ctx, accs[i], id); err != nil {
			return err
		}
	}
	return nil
}

// results makes a document of each group, in the order groups were
// first seen.
func (g *grouper) results() ([]bson.Raw, error) {
	out := make([]bson.Raw, 0, len(g.order))
	for _, k := range g.order {
		d, err := g.result(g.groups[k])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// result makes the document of one group.
func (g *grouper) result(gr *group) (bson.Raw, error) {
	// Refuse a document too large to return before building it.
	size := 5 + 6 + len(gr.id.Data)
	for i, a := range g.accs {
		size += 2 + len(a.field) + gr.accs[i].Size()
	}
	if size > MaxDocBytes {
		return nil, docTooLarge(size, "_id")
	}
	b := bsoncore.NewDocumentBuilder().AppendValue("_id", gr.id)
	for i, a := range g.accs {
		v := gr.accs[i].Result()
		if v.Type == 0 {
			v = values.Null
		}
		b.AppendValue(a.field, v)
	}
	return bson.Raw(b.Build()), nil
}

// stream groups the documents of src; what the groups hold is bounded as
// a blocking stage's.
func (g *groupStage) stream(r *run, src Source) ([]bson.Raw, error) {
	ctx := r.ctx
	gr := newGrouper(g.accs, r.blocking(groupExceeded), r.opts.Collator)
	j := 0
	err := src(func(doc bson.Raw) error {
		if j++; j%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		id, err := values.EvalOrNull(ctx, g.id, doc)
		if err != nil {
			return err
		}
		return gr.add(ctx, id, doc)
	})
	if err != nil {
		return nil, err
	}
	return gr.results()
}

// arrayOfDocs builds an array of documents, as the joins set their "as"
// field.
func arrayOfDocs(docs []bson.Raw) bsoncore.Value {
	arr := bsoncore.NewArrayBuilder()
	for _, d := range docs {
		arr.AppendDocument(d)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}
}
