package update

import (
	"math"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/mongoerr"
)

// pushOp is $push: insert values at a position, then sort, then trim.
type pushOp struct {
	values   []bsoncore.Value
	position int64 // where the values go; past the end appends
	slice    int64 // how many elements to keep, from the front, or if negative from the back
	sort     *pushSort
}

func parsePush(path string, v bsoncore.Value) (*leaf, error) {
	return parsePushUnder(nil)(path, v)
}

// parsePushUnder is $push under a collation, which its $sort sorts by.
func parsePushUnder(coll *collation.Collator) func(string, bsoncore.Value) (*leaf, error) {
	return func(_ string, v bsoncore.Value) (*leaf, error) {
		l, err := parsePushValue(v)
		if err == nil {
			if op := l.op.(pushOp); op.sort != nil {
				op.sort.coll = coll
			}
		}
		return l, err
	}
}

func parsePushValue(v bsoncore.Value) (*leaf, error) {
	op := pushOp{position: math.MaxInt64, slice: math.MaxInt64}
	doc, isDoc := v.DocumentOK()
	if _, err := doc.LookupErr("$each"); !isDoc || err != nil {
		op.values = []bsoncore.Value{v}
		return &leaf{op: op}, nil
	}
	elems, _ := doc.Elements()
	seen := map[string]bool{}
	for _, e := range elems {
		clause, val := e.Key(), e.Value()
		if seen[clause] {
			return nil, mongoerr.New(mongoerr.BadValue, "Only one %s is supported.", clause)
		}
		seen[clause] = true
		var err error
		switch clause {
		case "$each":
			arr, ok := val.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "The argument to $each in $push must be an array but it was of type: %s", typeName(val.Type))
			}
			op.values, _ = arr.Values()
		case "$slice":
			if op.slice, err = integer(clause, val); err != nil {
				return nil, mongoerr.New(mongoerr.BadValue, "The value for $slice must be an integer value but was given type: %s", typeName(val.Type))
			}
		case "$position":
			if op.position, err = integer(clause, val); err != nil {
				return nil, mongoerr.New(mongoerr.BadValue, "The value for $position must be an integer value, not of type: %s", typeName(val.Type))
			}
		case "$sort":
			if op.sort, err = parsePushSort(val); err != nil {
				return nil, err
			}
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "Unrecognized clause in $push: %s", clause)
		}
	}
	return &leaf{op: op}, nil
}

func (o pushOp) update(a *applier, t target) (bool, error) {
	if !t.elem.isArray() {
		return false, mongoerr.New(mongoerr.BadValue, "The field '%s' must be an array but is of type %s in document {%s}",
			dotted(t.taken), typeName(t.elem.typ), a.idString())
	}
	return o.push(t.elem), nil
}

func (o pushOp) create(*applier) (*value, error) {
	arr := newArray()
	o.push(arr)
	return arr, nil
}

func (o pushOp) push(arr *value) bool {
	arr.expand()
	changed := false
	if len(o.values) > 0 {
		n := int64(len(arr.elems))
		var at int64
		switch {
		case o.position > n:
			at = n
		case o.position > 0:
			at = o.position
		case o.position < 0 && -o.position < n:
			at = n + o.position
		}
		added := make([]*value, len(o.values))
		for i, v := range o.values {
			added[i] = newValue(v)
		}
		arr.elems = slices.Insert(arr.elems, int(at), added...)
		changed = true
	}
	if o.sort != nil {
		slices.SortStableFunc(arr.elems, o.sort.compare)
		changed = true
	}
	keep := o.slice
	if keep < 0 {
		keep = -max(keep, -math.MaxInt64)
	}
	if excess := int64(len(arr.elems)) - keep; excess > 0 {
		if o.slice >= 0 {
			arr.elems = arr.elems[:keep]
		} else {
			arr.elems = arr.elems[excess:]
		}
		changed = true
	}
	return changed
}

// pushSort orders array elements for $push's $sort: by whole value, or by
// the fields of a pattern, each ascending or descending.
type pushSort struct {
	desc   bool // whole-value sort
	fields []sortField
	coll   *collation.Collator
}

type sortField struct {
	path []string
	desc bool
}

func parsePushSort(v bsoncore.Value) (*pushSort, error) {
	switch {
	case isNumber(v.Type):
		switch toNumber(v).float() {
		case 1:
			return &pushSort{}, nil
		case -1:
			return &pushSort{desc: true}, nil
		}
		return nil, mongoerr.New(mongoerr.BadValue, "The $sort element value must be either 1 or -1")
	case v.Type != bsoncore.TypeEmbeddedDocument:
		return nil, mongoerr.New(mongoerr.BadValue, "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
	}
	elems, _ := v.Document().Elements()
	if len(elems) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "The $sort pattern is empty when it should be a set of fields.")
	}
	s := &pushSort{}
	for _, e := range elems {
		dir := 0.0
		if isNumber(e.Value().Type) {
			dir = toNumber(e.Value()).float()
		}
		if dir != 1 && dir != -1 {
			return nil, mongoerr.New(mongoerr.BadValue, "The $sort element value must be either 1 or -1")
		}
		if e.Key() == "" {
			return nil, mongoerr.New(mongoerr.BadValue, "The $sort field cannot be empty")
		}
		path := strings.Split(e.Key(), ".")
		if slices.Contains(path, "") {
			return nil, mongoerr.New(mongoerr.BadValue, "The $sort field is a dotted field but has an empty part: %s", e.Key())
		}
		s.fields = append(s.fields, sortField{path: path, desc: dir < 0})
	}
	return s, nil
}

func (s *pushSort) compare(x, y *value) int {
	if s.fields == nil {
		c := s.coll.Compare(x.encoded(), y.encoded())
		if s.desc {
			return -c
		}
		return c
	}
	for _, f := range s.fields {
		c := s.coll.Compare(sortKey(x, f.path), sortKey(y, f.path))
		if f.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// sortKey returns the value at path in a document element, or null: values
// that are not documents have no fields to sort by.
func sortKey(v *value, path []string) bsoncore.Value {
	cur := v.encoded()
	if cur.Type != bsoncore.TypeEmbeddedDocument {
		return bsoncore.Value{Type: bsoncore.TypeNull}
	}
	for _, part := range path {
		if cur.Type != bsoncore.TypeEmbeddedDocument && cur.Type != bsoncore.TypeArray {
			return bsoncore.Value{Type: bsoncore.TypeNull}
		}
		next, err := bsoncore.Document(cur.Data).LookupErr(part)
		if err != nil {
			return bsoncore.Value{Type: bsoncore.TypeNull}
		}
		cur = next
	}
	return cur
}
