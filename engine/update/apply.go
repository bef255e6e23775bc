package update

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// maxPadding is the most nulls MongoDB appends to an array to reach an index.
const maxPadding = 1500000

// applier carries the state of one application of an update to a document.
type applier struct {
	root       *value
	positional int // the array index the query matched for "$", or -1
	filters    map[string]*query.Filter
	now        time.Time
	insert     bool // building the document an upsert inserts
	changed    bool
}

// target is where a node applies: elem is the deepest element of the path
// that exists, and missing the components below it that do not.
type target struct {
	elem    *value
	parent  *value // elem's container; nil for the document itself
	taken   []string
	missing []string
}

func (t target) path() string { return dotted(t.taken, t.missing) }

// descend returns the target of the path extended by name.
func (t target) descend(name string) target {
	t = t.settle()
	if len(t.missing) == 0 {
		if c := t.elem.child(name); c != nil {
			return target{elem: c, parent: t.elem, taken: withPart(t.taken, name)}
		}
	}
	t.missing = withPart(t.missing, name)
	return t
}

// settle moves past missing components that an update applied earlier in
// the same pass has since created.
func (t target) settle() target {
	for len(t.missing) > 0 {
		c := t.elem.child(t.missing[0])
		if c == nil {
			break
		}
		t = target{elem: c, parent: t.elem, taken: withPart(t.taken, t.missing[0]), missing: t.missing[1:]}
	}
	return t
}

// name returns the field name of the target's element, as messages quote it.
func (t target) name() string {
	if len(t.taken) == 0 {
		return ""
	}
	return t.taken[len(t.taken)-1]
}

// apply applies the children in order. The positional child takes the
// matched index as its name and its place in that order; a child named by
// the same index applies to the same element, so the two merge.
func (n *objectNode) apply(a *applier, t target) error {
	pos := n.positional
	var matched string
	if pos != nil {
		if a.positional < 0 {
			return mongoerr.New(mongoerr.BadValue, "The positional operator did not find the match needed from the query.")
		}
		matched = strconv.Itoa(a.positional)
	}
	for _, name := range n.names {
		child := n.children[name]
		if pos != nil && name == matched {
			merged, err := merge(pos, child, withPart(slices.Concat(t.taken, t.missing), matched))
			if err != nil {
				return err
			}
			child, pos = merged, nil
		} else if pos != nil && fieldLess(matched, name) {
			if err := pos.apply(a, t.descend(matched)); err != nil {
				return err
			}
			pos = nil
		}
		if err := child.apply(a, t.descend(name)); err != nil {
			return err
		}
	}
	if pos != nil {
		return pos.apply(a, t.descend(matched))
	}
	return nil
}

// apply applies to each element of the array the children whose filters
// select it, merged when several do.
func (n *arrayNode) apply(a *applier, t target) error {
	t = t.settle()
	if len(t.missing) > 0 {
		return mongoerr.New(mongoerr.BadValue, "The path '%s' must exist in the document in order to apply array updates.", t.path())
	}
	if !t.elem.isArray() {
		return mongoerr.New(mongoerr.BadValue, "Cannot apply array updates to non-array element %s", describe(t.name(), t.elem.encoded()))
	}
	t.elem.expand()
	elems := t.elem.elems
	// Every filter sees the array as it was before any element changes.
	selected := make([][]node, len(elems))
	for i, e := range elems {
		for _, id := range n.ids {
			if id == "" || a.filters[id].Match(wrap(id, e)) {
				selected[i] = append(selected[i], n.children[id])
			}
		}
	}
	for i, nodes := range selected {
		if len(nodes) == 0 {
			continue
		}
		path := withPart(t.taken, strconv.Itoa(i))
		child := nodes[0]
		for _, other := range nodes[1:] {
			merged, err := merge(child, other, path)
			if err != nil {
				return err
			}
			child = merged
		}
		if err := child.apply(a, target{elem: elems[i], parent: t.elem, taken: path}); err != nil {
			return err
		}
	}
	return nil
}

// wrap returns the document {name: v}, the form in which array filters and
// $pull conditions examine an array element.
func wrap(name string, v *value) []byte {
	return bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, name, v.encoded()))
}

func (l *leaf) apply(a *applier, t target) error {
	if l.insertOnly && !a.insert {
		return nil
	}
	t = t.settle()
	if len(t.missing) == 0 {
		changed, err := l.op.update(a, t)
		if err != nil || !changed {
			return err
		}
		return a.modified(t, !l.removes)
	}
	v, err := l.op.create(a)
	if err != nil {
		return err
	}
	if v == nil {
		if l.tolerant {
			return nil
		}
		return checkViable(t)
	}
	return a.create(t, v)
}

func (placeholder) apply(*applier, target) error { return nil }

// modified records a change to the existing element at t, and validates
// the element's name when the change wrote a value.
func (a *applier) modified(t target, wrote bool) error {
	if t.taken[0] == "_id" {
		return mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '%s' would modify the immutable field '_id'", dotted(t.taken))
	}
	if wrote && len(t.taken) == 1 {
		if err := a.checkTopLevelName(t.taken[0]); err != nil {
			return err
		}
	}
	a.changed = true
	return nil
}

// create adds v at the missing path of t, creating documents for the
// components between and padding arrays with nulls up to an index.
func (a *applier) create(t target, v *value) error {
	for i := len(t.missing) - 1; i > 0; i-- {
		d := newDocument()
		d.appendField(t.missing[i], v)
		v = d
	}
	first := t.missing[0]
	switch {
	case t.elem.isDocument():
		t.elem.appendField(first, v)
	case t.elem.isArray():
		i, ok := arrayIndex(first)
		if !ok {
			return cannotCreate(t)
		}
		t.elem.expand()
		if i-len(t.elem.elems) > maxPadding {
			return mongoerr.New(mongoerr.CannotBackfillArray, "can't backfill more than %d elements", maxPadding)
		}
		for len(t.elem.elems) < i {
			t.elem.elems = append(t.elem.elems, &value{typ: bsoncore.TypeNull})
		}
		t.elem.elems = append(t.elem.elems, v)
	default:
		return cannotCreate(t)
	}
	if len(t.taken) == 0 {
		if err := a.checkTopLevelName(first); err != nil {
			return err
		}
	} else if t.taken[0] == "_id" {
		return mongoerr.New(mongoerr.ImmutableField, "Updating the path '%s' to %s would modify the immutable field '_id'",
			dotted(t.taken), describe(t.name(), t.elem.encoded()))
	}
	a.changed = true
	return nil
}

func cannotCreate(t target) error {
	return mongoerr.New(mongoerr.PathNotViable, "Cannot create field '%s' in element {%s}", t.missing[0], describe(t.name(), t.elem.encoded()))
}

// checkViable fails when the missing part of t could never be created, for
// the operators that otherwise ignore missing paths.
func checkViable(t target) error {
	if _, isIndex := arrayIndex(t.missing[0]); t.elem.isDocument() || (t.elem.isArray() && isIndex) {
		return nil
	}
	return mongoerr.New(mongoerr.PathNotViable, "Cannot use the part (%s) of (%s.%s) to traverse the element ({%s})",
		t.missing[0], dotted(t.taken), dotted(t.missing), describe(t.name(), t.elem.encoded()))
}

// checkTopLevelName refuses a $-prefixed top-level field that an update
// writes. Nested ones are allowed (MongoDB 5.0 on), and so is any field of
// the document an upsert inserts, which is validated as an insert.
func (a *applier) checkTopLevelName(name string) error {
	if a.insert || !strings.HasPrefix(name, "$") {
		return nil
	}
	return dollarPrefixed(name)
}

func dollarPrefixed(name string) error {
	return mongoerr.New(mongoerr.DollarPrefixedFieldName, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", name, name)
}

// idString writes the document's _id as MongoDB quotes it in messages.
func (a *applier) idString() string {
	if id := a.root.child("_id"); id != nil {
		return describe("_id", id.encoded())
	}
	return "no id"
}
