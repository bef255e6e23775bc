package project

import (
	"bytes"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// CompileAddFields parses the specification of a pipeline's $addFields
// stage, or of $set, its other name: fields, dotted paths included, set to
// the values of expressions. A document that is not an expression sets the
// fields it names inside the field's document, which stays otherwise.
func CompileAddFields(spec bson.Raw, opts Options) (*Projection, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	spec = bytes.Clone(spec)
	p := addFieldsParser{spec: spec, now: opts.Now, coll: opts.Collator}
	root := newNode()
	elems, _ := bsoncore.Document(spec).Elements()
	for _, e := range elems {
		path, err := checkPath(e.Key())
		if err != nil {
			return nil, err
		}
		if err := p.field(root, path, path, e.Value()); err != nil {
			return nil, err
		}
	}
	root.markComputed()
	return &Projection{root: root, typ: addition}, nil
}

// addFieldsParser builds the tree of an $addFields specification.
type addFieldsParser struct {
	spec bson.Raw
	now  time.Time
	coll *collation.Collator
	seen []string // the dotted paths set so far
}

// field parses the value set at path, which is relative to parent, and
// full from the root.
func (p *addFieldsParser) field(parent *node, path, full []string, v bsoncore.Value) error {
	if doc, ok := v.DocumentOK(); ok && !isExpressionDocument(doc) {
		elems, _ := doc.Elements()
		if len(elems) > 0 {
			return p.subFields(parent, path, full, elems)
		}
	}
	if doc, ok := v.DocumentOK(); ok && isExpressionDocument(doc) {
		if elems, _ := doc.Elements(); len(elems) != 1 {
			return mongoerr.New(mongoerr.Code(40181), "an expression specification must contain exactly one field, the name of the expression. Found %d fields in %s, while parsing object %s", len(elems), doc, p.spec)
		}
	}
	if err := p.claim(full); err != nil {
		return err
	}
	x, err := compileExpr(v, p.now, p.coll)
	if err != nil {
		return err
	}
	return addAt(parent, path, &child{kind: computed, expr: x})
}

// subFields parses {a: {b: ..., c: ...}}: fields set inside a's document.
func (p *addFieldsParser) subFields(parent *node, path, full []string, elems []bsoncore.Element) error {
	sub, err := subtreeAt(parent, path)
	if err != nil {
		return err
	}
	for _, e := range elems {
		key := e.Key()
		switch {
		case strings.HasPrefix(key, "$"):
			return mongoerr.New(mongoerr.Code(40181), "an expression specification must contain exactly one field, the name of the expression. Found %d fields in %s, while parsing object %s", len(elems), elemsDocument(elems), p.spec)
		case strings.Contains(key, "."):
			return mongoerr.New(mongoerr.Code(40183), "cannot use dotted field name '%s' in a sub object: %s", key, p.spec)
		}
		if err := checkFieldNames([]string{key}); err != nil {
			return err
		}
		if err := p.field(sub, []string{key}, append(slices.Clip(full), key), e.Value()); err != nil {
			return err
		}
	}
	return nil
}

func elemsDocument(elems []bsoncore.Element) bsoncore.Document {
	var b []byte
	for _, e := range elems {
		b = append(b, e...)
	}
	return bsoncore.BuildDocument(nil, b)
}

func isExpressionDocument(doc bsoncore.Document) bool {
	elems, _ := doc.Elements()
	return len(elems) > 0 && strings.HasPrefix(elems[0].Key(), "$")
}

// claim records a path the specification sets, which must neither be set
// already nor lie below or above another.
func (p *addFieldsParser) claim(path []string) error {
	dotted := strings.Join(path, ".")
	for _, other := range p.seen {
		if dotted == other || strings.HasPrefix(dotted, other+".") || strings.HasPrefix(other, dotted+".") {
			return mongoerr.New(mongoerr.Code(40176), "specification contains two conflicting paths. Cannot specify both '%s' and '%s': %s", dotted, other, p.spec)
		}
	}
	p.seen = append(p.seen, dotted)
	return nil
}

// addFields applies an $addFields node to doc: the fields the node sets
// take their new values where they stand, a missing value removing them,
// and the others follow in the specification's order.
func (a *applier) addFields(n *node, doc bsoncore.Document) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	set := map[string]bool{}
	elems, _ := doc.Elements()
	for _, e := range elems {
		c := n.byName[e.Key()]
		if c == nil {
			dst = append(dst, e...)
			continue
		}
		set[c.name] = true
		v, err := a.addFieldsTo(c, e.Value())
		if err != nil {
			return nil, err
		}
		if v.Type != 0 {
			dst = bsoncore.AppendValueElement(dst, c.name, v)
		}
	}
	for _, c := range n.children {
		if set[c.name] {
			continue
		}
		var err error
		if dst, err = c.appendComputed(a.ctx, dst, a.root); err != nil {
			return nil, err
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, nil
}

// addFieldsTo returns the new value of a field that c sets: the value of
// its expression, or the field's value with the fields below c set. Arrays
// have each of their elements set; a value without fields is replaced by a
// document of the computed fields.
func (a *applier) addFieldsTo(c *child, v bsoncore.Value) (bsoncore.Value, error) {
	if c.kind == computed {
		return c.expr.EvalContext(a.ctx, bson.Raw(a.root))
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		out, err := a.addFields(c.sub, v.Document())
		return bsoncore.Value{Type: v.Type, Data: out}, err
	case bsoncore.TypeArray:
		values, _ := v.Array().Values()
		for i, e := range values {
			var err error
			if values[i], err = a.addFieldsTo(c, e); err != nil {
				return bsoncore.Value{}, err
			}
		}
		return arrayValue(values), nil
	}
	return c.sub.evalComputed(a.ctx, a.root)
}
