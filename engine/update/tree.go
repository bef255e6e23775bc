package update

import (
	"slices"

	"github.com/lethedb/lethe/mongoerr"
)

// node is one step of a compiled operator update. Internal nodes name the next
// path component; leaves carry an operator.
type node interface {
	apply(a *applier, t target) error
}

// objectNode holds the children of a path that continues into a document,
// or into an array by index or by the positional operator.
type objectNode struct {
	names      []string // in the order MongoDB applies them, see fieldLess
	children   map[string]node
	positional node // the child under "$", if any
}

// arrayNode holds the children of a path that continues through "$[]" or
// "$[<id>]": each applies to the array elements its filter selects.
type arrayNode struct {
	ids      []string // sorted; "" stands for "$[]"
	children map[string]node
}

// leaf applies an operator at the end of its path.
type leaf struct {
	op         operator
	insertOnly bool // $setOnInsert: only when an upsert inserts
	// tolerant leaves a path that could never exist alone instead of
	// reporting it, as $unset does.
	tolerant bool
	// removes tells that the operator only takes away ($unset, $pop,
	// $pull): what remains needs no validation for storage.
	removes bool
}

// operator is the effect of one update operator on one path.
type operator interface {
	// update changes the element at t, which exists, and reports whether it
	// changed anything.
	update(a *applier, t target) (bool, error)
	// create returns the element to create where the path is missing, or nil
	// if the operator leaves missing paths alone.
	create(a *applier) (*value, error)
}

// placeholder holds a path that an operator elsewhere in the tree reads or
// removes ($rename's source), so that other operators conflict with it.
type placeholder struct{}

func newObjectNode() *objectNode { return &objectNode{children: map[string]node{}} }
func newArrayNode() *arrayNode   { return &arrayNode{children: map[string]node{}} }

func (n *objectNode) child(name string) node {
	if isPositional(name) {
		return n.positional
	}
	return n.children[name]
}

func (n *objectNode) setChild(name string, c node) {
	if isPositional(name) {
		n.positional = c
		return
	}
	i, _ := slices.BinarySearchFunc(n.names, name, func(a, b string) int {
		switch {
		case fieldLess(a, b):
			return -1
		case fieldLess(b, a):
			return 1
		}
		return 0
	})
	n.names = slices.Insert(n.names, i, name)
	n.children[name] = c
}

func (n *arrayNode) setChild(id string, c node) {
	i, _ := slices.BinarySearch(n.ids, id)
	n.ids = slices.Insert(n.ids, i, id)
	n.children[id] = c
}

// merge combines two nodes that apply to the same element: the positional
// child with a child named by the matched index, or the children of several
// array filters that select the same element. Two leaves, or a leaf and an
// internal node, cannot both apply.
func merge(x, y node, path []string) (node, error) {
	switch x := x.(type) {
	case *objectNode:
		if y, ok := y.(*objectNode); ok {
			m := newObjectNode()
			if err := mergeChildren(x.names, x.children, y.names, y.children, path, m.setChild, func(s string) string { return s }); err != nil {
				return nil, err
			}
			switch {
			case x.positional != nil && y.positional != nil:
				p, err := merge(x.positional, y.positional, withPart(path, "$"))
				if err != nil {
					return nil, err
				}
				m.positional = p
			case x.positional != nil:
				m.positional = x.positional
			default:
				m.positional = y.positional
			}
			return m, nil
		}
	case *arrayNode:
		if y, ok := y.(*arrayNode); ok {
			m := newArrayNode()
			err := mergeChildren(x.ids, x.children, y.ids, y.children, path, m.setChild, func(id string) string { return "$[" + id + "]" })
			return m, err
		}
	}
	return nil, mongoerr.New(mongoerr.ConflictingUpdateOperators, "Update created a conflict at '%s'", dotted(path))
}

func mergeChildren(xNames []string, x map[string]node, yNames []string, y map[string]node, path []string, set func(string, node), part func(string) string) error {
	for _, name := range xNames {
		c := x[name]
		if other, ok := y[name]; ok {
			m, err := merge(c, other, withPart(path, part(name)))
			if err != nil {
				return err
			}
			c = m
		}
		set(name, c)
	}
	for _, name := range yNames {
		if _, ok := x[name]; !ok {
			set(name, y[name])
		}
	}
	return nil
}
