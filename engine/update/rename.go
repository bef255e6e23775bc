package update

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// renameNode is $rename, placed in the tree at the destination path: it moves
// the source's value there. The source path holds a placeholder, so that no
// other operator in the update touches it.
type renameNode struct {
	from, to []string
}

func (r *renameNode) apply(a *applier, t target) error {
	src, srcParent, err := r.source(a)
	if err != nil || src == nil {
		return err
	}
	t = t.settle()
	if err := r.checkDestination(a, t); err != nil {
		return err
	}
	if len(t.missing) == 0 {
		*t.elem = *src
		if err := a.modified(t, true); err != nil {
			return err
		}
	} else if err := a.create(t, src); err != nil {
		return err
	}
	srcParent.removeField(r.from[len(r.from)-1])
	if r.from[0] == "_id" {
		return mongoerr.New(mongoerr.ImmutableField, "Unsetting the path '%s' using $rename would modify the immutable field '_id'", dotted(r.from))
	}
	a.changed = true
	return nil
}

// source finds the element to move, or nil if there is none. Moving an
// element out of an array is refused: it would shift the elements after it.
func (r *renameNode) source(a *applier) (src, parent *value, err error) {
	cur := a.root
	var ancestors []*value
	for i, part := range r.from {
		_, isIndex := arrayIndex(part)
		if !cur.isDocument() && !(cur.isArray() && isIndex) {
			name := ""
			if i > 0 {
				name = r.from[i-1]
			}
			return nil, nil, mongoerr.New(mongoerr.PathNotViable, "cannot use the part (%s of %s) to traverse the element ({%s})",
				name, dotted(r.from), describe(name, cur.encoded()))
		}
		next := cur.child(part)
		if next == nil {
			return nil, nil, nil
		}
		ancestors = append(ancestors, cur)
		cur = next
	}
	for i := len(ancestors) - 1; i > 0; i-- {
		if ancestors[i].isArray() {
			return nil, nil, mongoerr.New(mongoerr.BadValue, "The source field cannot be an array element, '%s' in doc with %s has an array field called '%s'",
				dotted(r.from), a.idString(), r.from[i-1])
		}
	}
	return cur, ancestors[len(ancestors)-1], nil
}

// checkDestination refuses a destination inside an array. An existing
// destination may itself be an array: it is replaced whole.
func (r *renameNode) checkDestination(a *applier, t target) error {
	depth := len(t.taken)
	if len(t.missing) == 0 {
		depth--
	}
	cur := a.root
	var arrayField string
	for _, part := range t.taken[:depth] {
		cur = cur.child(part)
		if cur.isArray() {
			arrayField = part
		}
	}
	if arrayField != "" {
		return mongoerr.New(mongoerr.BadValue, "The destination field cannot be an array element, '%s' in doc with %s has an array field called '%s'",
			dotted(r.to), a.idString(), arrayField)
	}
	return nil
}

// parseRename checks a $rename of from to the string in v.
func parseRename(from []string, v bsoncore.Value) (*renameNode, error) {
	to := splitPath(v.StringValue())
	name := dotted(from)
	switch {
	case equalPaths(from, to):
		return nil, mongoerr.New(mongoerr.BadValue, "The source and target field for $rename must differ: %s", describe(name, v))
	case isPrefix(from, to) || isPrefix(to, from):
		return nil, mongoerr.New(mongoerr.BadValue, "The source and target field for $rename must not be on the same path: %s", describe(name, v))
	case isDynamic(from):
		return nil, mongoerr.New(mongoerr.BadValue, "The source field for $rename may not be dynamic: %s", name)
	case isDynamic(to):
		return nil, mongoerr.New(mongoerr.BadValue, "The destination field for $rename may not be dynamic: %s", dotted(to))
	}
	return &renameNode{from: from, to: to}, nil
}

func equalPaths(a, b []string) bool {
	return len(a) == len(b) && isPrefixOrEqual(a, b)
}

// isPrefix reports whether a is a strict prefix of b.
func isPrefix(a, b []string) bool {
	return len(a) < len(b) && isPrefixOrEqual(a, b)
}

func isPrefixOrEqual(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isDynamic(path []string) bool {
	for _, part := range path {
		if _, ok := arrayFilterID(part); ok || isPositional(part) {
			return true
		}
	}
	return false
}
