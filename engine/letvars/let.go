package letvars

import (
	"maps"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/mongoerr"
)

// Let holds the variables of a command's let (and of an update statement's
// c): each expression evaluated once, before any document is read.
//
// The variables reach expressions by substitution: every reference
// "$$name" or "$$name.path" to one of them, where no inner $let, $map,
// $filter or $reduce rebinds the name, becomes the constant itself. The
// rewritten filters, projections and stages then compile as usual, which
// keeps the expression compiler unaware of command options.
type Let struct {
	vars map[string]bsoncore.Value // Type 0: missing
}

// Of wraps values already evaluated, such as the variables an aggregation
// stage hands to a sub-pipeline ($lookup's let), for substitution.
func Of(vars map[string]bsoncore.Value) *Let { return &Let{vars: vars} }

// ParseLet evaluates a let document. Names follow the rules of $let's
// vars; the system variables are read-only. CURRENT, which $let may
// rebind, is refused too: rebinding it would change what every field path
// of the command reads, which substitution cannot express.
func ParseLet(doc bson.Raw, now time.Time) (*Let, error) {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid let document: %v", err)
	}
	l := &Let{vars: make(map[string]bsoncore.Value, len(elems))}
	for _, el := range elems {
		name := el.Key()
		switch name {
		case "NOW", "CLUSTER_TIME", "USER_ROLES", "JS_SCOPE", "IS_MR":
			return nil, mongoerr.New(4738901, "Attempt to set internal constant: %s", name)
		case "CURRENT":
			return nil, mongoerr.New(mongoerr.BadValue, "Invalid 'let' parameter :: caused by :: CURRENT cannot be a command's let variable in Lethe")
		}
		if err := expr.CheckVariableDefinition(name); err != nil {
			if me, ok := mongoerr.As(err); ok {
				return nil, mongoerr.New(me.Code, "Invalid 'let' parameter :: caused by :: %s", me.Msg)
			}
			return nil, err
		}
		if readsDocument(el.Value()) {
			return nil, mongoerr.New(4890500, "Command let Expression tried to access a field, but this is not allowed because"+
				"Command let Expressions run before the query examines any documents.")
		}
		ex, err := expr.CompileExprWith(el.Value(), expr.ExprOptions{Now: now})
		if err != nil {
			return nil, err
		}
		v, err := ex.Eval(bson.Raw(bsoncore.NewDocumentBuilder().Build()))
		if err != nil {
			return nil, err
		}
		l.vars[name] = bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
	}
	return l, nil
}

// readsDocument reports whether an expression reads the document it is
// evaluated against: a field path, $$ROOT or $$CURRENT outside $literal.
func readsDocument(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString:
		s := v.StringValue()
		if !strings.HasPrefix(s, "$$") {
			return strings.HasPrefix(s, "$")
		}
		name, _, _ := strings.Cut(s[2:], ".")
		return name == "ROOT" || name == "CURRENT"
	case bsoncore.TypeArray, bsoncore.TypeEmbeddedDocument:
		elems, _ := bsoncore.Document(v.Data).Elements()
		for _, el := range elems {
			if el.Key() == "$literal" {
				continue
			}
			if readsDocument(el.Value()) {
				return true
			}
		}
	}
	return false
}

// With returns the variables of l and of more, more's winning a clash, as
// an update statement's constants c override the command's let.
func (l *Let) With(more *Let) *Let {
	switch {
	case l == nil:
		return more
	case more == nil:
		return l
	}
	out := &Let{vars: maps.Clone(l.vars)}
	maps.Copy(out.vars, more.vars)
	return out
}

// maxLetGrowth bounds the bytes substitution may add to one command's
// filters, projections and stages: a large variable referenced many times
// would otherwise multiply into more memory than any request may take.
const maxLetGrowth = 16 << 20

// Filter binds the variables in the $expr parts of a query filter; the
// rest of a filter compares with literal strings, "$$x" included.
func (l *Let) Filter(filter bson.Raw) (bson.Raw, error) {
	if l == nil || len(filter) == 0 {
		return filter, nil
	}
	r := &rewriter{Let: l}
	out := r.filterDoc(filter, nil)
	return bson.Raw(out), r.err
}

// Projection binds the variables in a find projection's computed fields.
func (l *Let) Projection(proj bson.Raw) (bson.Raw, error) {
	if l == nil || len(proj) == 0 {
		return proj, nil
	}
	r := &rewriter{Let: l}
	out := r.expr(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: proj}, nil)
	return bson.Raw(out.Data), r.err
}

// Pipeline binds the variables in aggregation stages: the $expr of $match
// stages and the expressions of the others.
func (l *Let) Pipeline(stages []bson.Raw) ([]bson.Raw, error) {
	if l == nil {
		return stages, nil
	}
	r := &rewriter{Let: l}
	out := make([]bson.Raw, len(stages))
	for i, st := range stages {
		out[i] = r.stage(st, nil)
	}
	return out, r.err
}

// rewriter substitutes the variables of one Let, keeping count of the
// bytes it adds.
type rewriter struct {
	*Let
	added int
	err   error
}

func (r *rewriter) filterDoc(doc []byte, shadowed map[string]bool) []byte {
	elems, err := bsoncore.Document(doc).Elements()
	if err != nil {
		return doc // the filter compiler reports it
	}
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "$expr":
			v = r.expr(v, shadowed)
		case "$and", "$or", "$nor":
			if v.Type == bsoncore.TypeArray {
				v = mapArray(v, func(e bsoncore.Value) bsoncore.Value {
					if e.Type == bsoncore.TypeEmbeddedDocument {
						e.Data = r.filterDoc(e.Data, shadowed)
					}
					return e
				})
			}
		}
		b.AppendValue(el.Key(), v)
	}
	return b.Build()
}

func (r *rewriter) stage(st bson.Raw, shadowed map[string]bool) bson.Raw {
	elems, err := bsoncore.Document(st).Elements()
	if err != nil || len(elems) != 1 {
		return st // the pipeline reports it
	}
	name, v := elems[0].Key(), elems[0].Value()
	switch name {
	case "$match":
		if v.Type == bsoncore.TypeEmbeddedDocument {
			v.Data = r.filterDoc(v.Data, shadowed)
		}
	case "$sort", "$skip", "$limit", "$count", "$unset":
	case "$lookup", "$unionWith":
		if v.Type == bsoncore.TypeEmbeddedDocument {
			v = r.subPipelineStage(v, shadowed)
		}
	default:
		v = r.expr(v, shadowed)
	}
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendValue(name, v).Build())
}

// subPipelineStage substitutes in the options of a $lookup or $unionWith:
// its sub-pipeline's stages as stages, where the names of the stage's own
// let are shadowed, and its let expressions, which read the outer scope.
func (r *rewriter) subPipelineStage(v bsoncore.Value, shadowed map[string]bool) bsoncore.Value {
	inner := shadowed
	if let, ok := bsoncore.Document(v.Data).Lookup("let").DocumentOK(); ok {
		names, _ := let.Elements()
		inner = make(map[string]bool, len(shadowed)+len(names))
		for k := range shadowed {
			inner[k] = true
		}
		for _, n := range names {
			inner[n.Key()] = true
		}
	}
	elems, _ := bsoncore.Document(v.Data).Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		ev := el.Value()
		switch el.Key() {
		case "let":
			ev = r.expr(ev, shadowed)
		case "pipeline":
			if ev.Type == bsoncore.TypeArray {
				ev = mapArray(ev, func(e bsoncore.Value) bsoncore.Value {
					if e.Type == bsoncore.TypeEmbeddedDocument {
						e.Data = r.stage(e.Data, inner)
					}
					return e
				})
			}
		}
		b.AppendValue(el.Key(), ev)
	}
	return docValue(b.Build())
}

// expr substitutes the variables in an expression; shadowed holds the
// names an enclosing operator rebinds.
func (r *rewriter) expr(v bsoncore.Value, shadowed map[string]bool) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeString:
		s := v.StringValue()
		if !strings.HasPrefix(s, "$$") {
			return v
		}
		name, _, dotted := strings.Cut(s[2:], ".")
		c, ok := r.vars[name]
		if !ok || shadowed[name] || r.err != nil {
			return v
		}
		if r.added += len(c.Data); r.added > maxLetGrowth {
			r.err = mongoerr.New(mongoerr.BSONObjectTooLarge, "let variables would grow the command by more than %d bytes where they are used", maxLetGrowth)
			return v
		}
		if !dotted {
			return constant(c)
		}
		// A path into the constant: bind it to its own name around the
		// reference, so that the evaluator walks the path.
		vars := bsoncore.NewDocumentBuilder().AppendValue(name, constant(c)).Build()
		let := bsoncore.NewDocumentBuilder().AppendDocument("vars", vars).AppendValue("in", v).Build()
		return docValue(bsoncore.NewDocumentBuilder().AppendDocument("$let", let).Build())
	case bsoncore.TypeArray:
		return mapArray(v, func(e bsoncore.Value) bsoncore.Value { return r.expr(e, shadowed) })
	case bsoncore.TypeEmbeddedDocument:
		return r.exprDoc(v, shadowed)
	}
	return v
}

func (r *rewriter) exprDoc(v bsoncore.Value, shadowed map[string]bool) bsoncore.Value {
	elems, err := bsoncore.Document(v.Data).Elements()
	if err != nil {
		return v
	}
	if len(elems) == 1 {
		op, arg := elems[0].Key(), elems[0].Value()
		switch op {
		case "$literal", "$elemMatch":
			// A literal is not evaluated; an $elemMatch projection is a
			// query, which compares with strings literally.
			return v
		case "$let", "$map", "$filter", "$reduce":
			if arg.Type == bsoncore.TypeEmbeddedDocument {
				return docValue(bsoncore.NewDocumentBuilder().AppendValue(op, r.scoped(op, arg, shadowed)).Build())
			}
		}
	}
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		b.AppendValue(el.Key(), r.expr(el.Value(), shadowed))
	}
	return docValue(b.Build())
}

// scoped substitutes in the arguments of an operator that binds variables:
// the names it binds are shadowed in the arguments that see them.
func (r *rewriter) scoped(op string, arg bsoncore.Value, shadowed map[string]bool) bsoncore.Value {
	elems, _ := bsoncore.Document(arg.Data).Elements()
	inner := make(map[string]bool, len(shadowed)+2)
	for k := range shadowed {
		inner[k] = true
	}
	switch op {
	case "$let":
		if vars, ok := bsoncore.Document(arg.Data).Lookup("vars").DocumentOK(); ok {
			names, _ := vars.Elements()
			for _, n := range names {
				inner[n.Key()] = true
			}
		}
	case "$map", "$filter":
		as := "this"
		if s, ok := bsoncore.Document(arg.Data).Lookup("as").StringValueOK(); ok {
			as = s
		}
		inner[as] = true
	case "$reduce":
		inner["this"], inner["value"] = true, true
	}
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		switch el.Key() {
		case "in", "cond":
			b.AppendValue(el.Key(), r.expr(el.Value(), inner))
		case "as":
			b.AppendValue(el.Key(), el.Value())
		default:
			b.AppendValue(el.Key(), r.expr(el.Value(), shadowed))
		}
	}
	return docValue(b.Build())
}

func mapArray(v bsoncore.Value, f func(bsoncore.Value) bsoncore.Value) bsoncore.Value {
	vals, err := bsoncore.Array(v.Data).Values()
	if err != nil {
		return v
	}
	b := bsoncore.NewArrayBuilder()
	for _, e := range vals {
		b.AppendValue(f(e))
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b.Build()}
}

// constant is the expression for a variable's value: {$literal: v}, or
// $$REMOVE for a missing value.
func constant(v bsoncore.Value) bsoncore.Value {
	if v.Type == 0 {
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "$$REMOVE")}
	}
	return docValue(bsoncore.NewDocumentBuilder().AppendValue("$literal", v).Build())
}

func docValue(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}
