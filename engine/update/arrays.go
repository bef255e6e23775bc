package update

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// addToSetOp is $addToSet: append the values the array does not hold yet,
// equal ones told apart under coll.
type addToSetOp struct {
	values []bsoncore.Value
	coll   *collation.Collator
}

func parseAddToSet(path string, v bsoncore.Value) (*leaf, error) {
	return parseAddToSetUnder(nil)(path, v)
}

// parseAddToSetUnder is parseAddToSet under a collation.
func parseAddToSetUnder(coll *collation.Collator) func(string, bsoncore.Value) (*leaf, error) {
	return func(_ string, v bsoncore.Value) (*leaf, error) { return parseAddToSetValues(v, coll) }
}

func parseAddToSetValues(v bsoncore.Value, coll *collation.Collator) (*leaf, error) {
	values := []bsoncore.Value{v}
	if doc, ok := v.DocumentOK(); ok {
		elems, _ := doc.Elements()
		if len(elems) > 0 && elems[0].Key() == "$each" {
			arr, ok := elems[0].Value().ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "The argument to $each in $addToSet must be an array but it was of type %s", typeName(elems[0].Value().Type))
			}
			if len(elems) > 1 {
				return nil, mongoerr.New(mongoerr.BadValue, "Found unexpected fields after $each in $addToSet: %s", describeDocument(doc))
			}
			values, _ = arr.Values()
		}
	}
	var unique []bsoncore.Value
	for _, v := range values {
		if !containsValue(coll, unique, v) {
			unique = append(unique, v)
		}
	}
	return &leaf{op: addToSetOp{values: unique, coll: coll}}, nil
}

// containsValue reports whether values holds one equal to v under coll.
func containsValue(coll *collation.Collator, values []bsoncore.Value, v bsoncore.Value) bool {
	return slices.ContainsFunc(values, func(x bsoncore.Value) bool { return coll.Compare(x, v) == 0 })
}

func (o addToSetOp) update(_ *applier, t target) (bool, error) {
	if !t.elem.isArray() {
		return false, mongoerr.New(mongoerr.BadValue, "Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s", t.name(), typeName(t.elem.typ))
	}
	t.elem.expand()
	present := make([]bsoncore.Value, len(t.elem.elems))
	for i, e := range t.elem.elems {
		present[i] = e.encoded()
	}
	changed := false
	for _, v := range o.values {
		if !containsValue(o.coll, present, v) {
			t.elem.elems = append(t.elem.elems, newValue(v))
			changed = true
		}
	}
	return changed, nil
}

func (o addToSetOp) create(*applier) (*value, error) {
	arr := newArray()
	for _, v := range o.values {
		arr.elems = append(arr.elems, newValue(v))
	}
	return arr, nil
}

// popOp is $pop: remove the first or the last element.
type popOp struct{ front bool }

func parsePop(name string, v bsoncore.Value) (*leaf, error) {
	n, err := integer(name, v)
	if err != nil {
		return nil, err
	}
	if n != 1 && n != -1 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$pop expects 1 or -1, found: %d", n)
	}
	return &leaf{op: popOp{front: n == -1}, removes: true}, nil
}

func (o popOp) update(_ *applier, t target) (bool, error) {
	if !t.elem.isArray() {
		return false, mongoerr.New(mongoerr.TypeMismatch, "Path '%s' contains an element of non-array type '%s'", dotted(t.taken), typeName(t.elem.typ))
	}
	t.elem.expand()
	if len(t.elem.elems) == 0 {
		return false, nil
	}
	if o.front {
		t.elem.elems = t.elem.elems[1:]
	} else {
		t.elem.elems = t.elem.elems[:len(t.elem.elems)-1]
	}
	return true, nil
}

func (popOp) create(*applier) (*value, error) { return nil, nil }

// pullOp is $pull and $pullAll: remove the elements that match.
type pullOp struct{ match func(*value) bool }

// pullWrapName names the field under which a $pull condition on an
// operator, such as {$gte: 6}, examines each element.
const pullWrapName = "e"

// pathOperators are the query operators that apply to a field's value. A
// $pull condition starting with one applies to each element itself; any
// other document condition applies to the fields of document elements.
var pathOperators = map[string]bool{
	"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$in": true, "$nin": true, "$exists": true, "$type": true, "$size": true, "$all": true,
	"$elemMatch": true, "$regex": true, "$options": true, "$mod": true, "$not": true,
	"$bitsAllSet": true, "$bitsAllClear": true, "$bitsAnySet": true, "$bitsAnyClear": true,
	"$geoWithin": true, "$geoIntersects": true, "$near": true, "$nearSphere": true, "$within": true,
}

func parsePull(path string, v bsoncore.Value) (*leaf, error) {
	return parsePullUnder(nil)(path, v)
}

// parsePullUnder is parsePull under a collation: the conditions and the
// values compare strings under coll.
func parsePullUnder(coll *collation.Collator) func(string, bsoncore.Value) (*leaf, error) {
	return func(_ string, v bsoncore.Value) (*leaf, error) { return parsePullValue(v, coll) }
}

func parsePullValue(v bsoncore.Value, coll *collation.Collator) (*leaf, error) {
	doc, isDoc := v.DocumentOK()
	first := ""
	if elems, _ := doc.Elements(); isDoc && len(elems) > 0 {
		first = elems[0].Key()
	}
	switch {
	case isDoc && !pathOperators[first]:
		f, err := query.CompileWith(bson.Raw(doc), query.Options{Collator: coll})
		if err != nil {
			return nil, err
		}
		return &leaf{op: pullOp{func(e *value) bool {
			return e.isDocument() && f.Match(bson.Raw(e.encoded().Data))
		}}, removes: true}, nil
	case isDoc || v.Type == bsoncore.TypeRegex:
		f, err := query.CompileWith(bsoncore.BuildDocument(nil, bsoncore.AppendValueElement(nil, pullWrapName, v)), query.Options{Collator: coll})
		if err != nil {
			return nil, err
		}
		return &leaf{op: pullOp{func(e *value) bool { return f.Match(wrap(pullWrapName, e)) }}, removes: true}, nil
	}
	return &leaf{op: pullOp{func(e *value) bool { return coll.Compare(e.encoded(), v) == 0 }}, removes: true}, nil
}

func parsePullAll(path string, v bsoncore.Value) (*leaf, error) {
	return parsePullAllUnder(nil)(path, v)
}

// parsePullAllUnder is parsePullAll under a collation.
func parsePullAllUnder(coll *collation.Collator) func(string, bsoncore.Value) (*leaf, error) {
	return func(_ string, v bsoncore.Value) (*leaf, error) {
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "$pullAll requires an array argument but was given a %s", typeName(v.Type))
		}
		values, _ := arr.Values()
		return &leaf{op: pullOp{func(e *value) bool { return containsValue(coll, values, e.encoded()) }}, removes: true}, nil
	}
}

func (o pullOp) update(_ *applier, t target) (bool, error) {
	if !t.elem.isArray() {
		return false, mongoerr.New(mongoerr.BadValue, "Cannot apply $pull to a non-array value")
	}
	t.elem.expand()
	n := len(t.elem.elems)
	t.elem.elems = slices.DeleteFunc(t.elem.elems, o.match)
	return len(t.elem.elems) != n, nil
}

func (pullOp) create(*applier) (*value, error) { return nil, nil }
