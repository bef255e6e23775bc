package project

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// node holds the projection of one level of a document.
type node struct {
	children []*child // in the projection's order
	byName   map[string]*child
	// computed tells that the subtree computes fields, which then appear
	// even where the input has nothing to project.
	computed bool
}

type kind uint8

const (
	included  kind = iota // the field as it is
	excluded              // the field left out
	subtree               // the field projected by sub
	computed              // the value of expr
	sliced                // $slice of an array field
	elemMatch             // the first array element matching match
)

// child is the projection of one field.
type child struct {
	name string
	kind kind
	sub  *node
	expr *expr.Expr
	// skip and limit are $slice's arguments; hasSkip tells the [skip,
	// limit] form from the plain limit.
	skip, limit int
	hasSkip     bool
	match       *query.Filter
	// positional marks the path of an "a.$" projection: the first array on
	// it is cut down to the element the query matched.
	positional bool
}

func newNode() *node { return &node{byName: map[string]*child{}} }

func (n *node) add(c *child) {
	n.children = append(n.children, c)
	n.byName[c.name] = c
}

func (n *node) remove(name string) {
	for i, c := range n.children {
		if c.name == name {
			n.children = append(n.children[:i], n.children[i+1:]...)
			delete(n.byName, name)
			return
		}
	}
}

// markComputed sets the computed flags of n's subtree and reports n's.
func (n *node) markComputed() bool {
	for _, c := range n.children {
		switch c.kind {
		case computed, elemMatch:
			n.computed = true
		case subtree:
			if c.sub.markComputed() {
				n.computed = true
			}
		}
	}
	return n.computed
}

// evalComputed builds the document of n's computed fields alone: what an
// inclusion projection makes of a value that has no fields to project.
func (n *node) evalComputed(ctx context.Context, root bsoncore.Document) (bsoncore.Value, error) {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	for _, c := range n.children {
		var err error
		if dst, err = c.appendComputed(ctx, dst, root); err != nil {
			return bsoncore.Value{}, err
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dst}, nil
}

// appendComputed appends the field c computes, if it has a value.
// Each computed value is at most query.MaxValueBytes, and so must be the
// document they are gathered in: the check as each is added stops a
// projection of many large values early.
func (c *child) appendComputed(ctx context.Context, dst []byte, root bsoncore.Document) ([]byte, error) {
	v, err := c.evalComputed(ctx, root)
	if err != nil || v.Type == 0 {
		return dst, err
	}
	if n := len(dst) + len(c.name) + len(v.Data) + 3; n > expr.MaxValueBytes {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "the projected document would be at least %d bytes, more than the maximum BSON size of %d bytes", n, expr.MaxValueBytes)
	}
	return bsoncore.AppendValueElement(dst, c.name, v), nil
}

// evalComputed returns the value c computes where the input has nothing:
// its expression's value, or a document of the computed fields below it.
// The value is missing when there is none.
func (c *child) evalComputed(ctx context.Context, root bsoncore.Document) (bsoncore.Value, error) {
	switch {
	case c.kind == computed:
		return c.expr.EvalContext(ctx, bson.Raw(root))
	case c.kind == subtree && c.sub.computed:
		return c.sub.evalComputed(ctx, root)
	}
	return bsoncore.Value{}, nil
}
