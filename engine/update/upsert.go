package update

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

// ApplyUpsert builds the document an upsert inserts when filter matches
// nothing. An operator update starts from the equality conditions of the
// filter, dotted paths becoming embedded documents, and applies its operators,
// $setOnInsert included; a pipeline runs on the same document. A replacement
// keeps only the filter's _id equality. The result has _id first when it
// has one; the caller adds an _id when not.
func (u *Update) ApplyUpsert(filter bson.Raw) (bson.Raw, error) {
	// A replacement takes only _id from the filter, and looks at no other
	// path, ambiguous or not.
	x := extractor{onlyID: u.IsReplacement()}
	if err := x.extract(bsoncore.Document(filter)); err != nil {
		return nil, err
	}
	eqs := x.eqs
	root := newDocument()
	if u.IsReplacement() {
		return u.upsertReplacement(root, eqs)
	}
	for _, eq := range eqs {
		setPath(root, eq.path, eq.val)
	}
	if u.pipeline != nil {
		return u.upsertPipeline(root)
	}
	a := u.applier(root, -1, true)
	if err := u.root.apply(a, target{elem: root}); err != nil {
		return nil, err
	}
	if err := checkInsertedID(root); err != nil {
		return nil, err
	}
	return finish(root)
}

func (u *Update) upsertReplacement(root *value, eqs []equality) (bson.Raw, error) {
	var queryID *bsoncore.Value
	if len(eqs) > 0 {
		queryID = &eqs[0].val
	}
	newID, hasID := lookupID(u.replacement)
	if queryID != nil {
		if hasID && keycodec.Compare(*queryID, newID) != 0 {
			return nil, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to %s", describe("_id", newID))
		}
		if !hasID {
			root.appendField("_id", newValue(*queryID))
		}
	}
	elems, _ := bsoncore.Document(u.replacement).Elements()
	for _, e := range elems {
		root.appendField(e.Key(), newValue(e.Value()))
	}
	if err := checkInsertedID(root); err != nil {
		return nil, err
	}
	return finish(root)
}

// upsertPipeline runs the pipeline on the document the filter's equalities
// make, which it may change but for its _id.
func (u *Update) upsertPipeline(root *value) (bson.Raw, error) {
	seed, err := finish(root)
	if err != nil {
		return nil, err
	}
	out, err := u.run(context.Background(), seed)
	if err != nil {
		return nil, err
	}
	if out, _, err = replace(seed, out, true); err != nil {
		return nil, err
	}
	if id, ok := lookupID(out); ok {
		if err := checkIDType(id.Type); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkInsertedID refuses an _id that cannot be stored.
func checkInsertedID(root *value) error {
	if id := root.child("_id"); id != nil {
		return checkIDType(id.typ)
	}
	return nil
}

func checkIDType(t bsoncore.Type) error {
	switch t {
	case bsoncore.TypeRegex, bsoncore.TypeArray, bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIdField, "The '_id' value cannot be of type %s", typeName(t))
	}
	return nil
}

// equality is a condition of a filter that fixes the value at a path.
type equality struct {
	path []string
	val  bsoncore.Value
}

// extractor collects the equality conditions of a filter: fields compared to
// a value or with $eq, at the top level or under $and, in the order they
// appear. Two conditions on one path, or on a path and its prefix, leave the
// value ambiguous and are refused.
type extractor struct {
	onlyID bool // collect _id alone, which must then be compared whole
	eqs    []equality
}

func (x *extractor) extract(filter bsoncore.Document) error {
	elems, _ := filter.Elements()
	for _, e := range elems {
		key, v := e.Key(), e.Value()
		switch {
		case key == "$and" || key == "$or":
			clauses, _ := v.Array().Values()
			// A one-clause $or is the same as its clause.
			if key == "$or" && len(clauses) != 1 {
				continue
			}
			for _, c := range clauses {
				if doc, ok := c.DocumentOK(); ok {
					if err := x.extract(doc); err != nil {
						return err
					}
				}
			}
		case strings.HasPrefix(key, "$"):
		case isOperatorDocument(v):
			ops, _ := v.Document().Elements()
			for _, op := range ops {
				var err error
				switch op.Key() {
				case "$eq":
					err = x.add(key, op.Value())
				case "$in":
					// A one-value $in is the same as $eq.
					if values, _ := op.Value().Array().Values(); len(values) == 1 && values[0].Type != bsoncore.TypeRegex {
						err = x.add(key, values[0])
					}
				}
				if err != nil {
					return err
				}
			}
		case v.Type == bsoncore.TypeRegex:
		default:
			if err := x.add(key, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func isOperatorDocument(v bsoncore.Value) bool {
	doc, ok := v.DocumentOK()
	if !ok {
		return false
	}
	elems, _ := doc.Elements()
	return len(elems) > 0 && strings.HasPrefix(elems[0].Key(), "$")
}

func (x *extractor) add(key string, v bsoncore.Value) error {
	path := splitPath(key)
	if x.onlyID {
		if path[0] != "_id" {
			return nil
		}
		if len(path) > 1 {
			return mongoerr.New(mongoerr.NotExactValueField, "field at '_id' must be exactly specified, field at sub-path '%s'found", key)
		}
	}
	for _, eq := range x.eqs {
		switch {
		case equalPaths(eq.path, path):
			return mongoerr.New(mongoerr.NotSingleValueField, "cannot infer query fields to set, path '%s' is matched twice", key)
		case isPrefix(eq.path, path):
			return ambiguous(path, eq.path)
		case isPrefix(path, eq.path):
			return ambiguous(eq.path, path)
		}
	}
	x.eqs = append(x.eqs, equality{path: path, val: v})
	return nil
}

func ambiguous(longer, shorter []string) error {
	return mongoerr.New(mongoerr.NotSingleValueField, "cannot infer query fields to set, both paths '%s' and '%s' are matched", dotted(longer), dotted(shorter))
}

// setPath sets the value at path, creating embedded documents on the way.
// Equalities never overlap, so every component met on the way is a document
// this function created.
func setPath(root *value, path []string, v bsoncore.Value) {
	cur := root
	for _, part := range path[:len(path)-1] {
		next := cur.child(part)
		if next == nil {
			next = newDocument()
			cur.appendField(part, next)
		}
		cur = next
	}
	cur.appendField(path[len(path)-1], newValue(v))
}
