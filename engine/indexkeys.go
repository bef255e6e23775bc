package engine

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// ambiguousFieldName is MongoDB's code for a document an index on a
// positional path cannot hold: the number names both an array element and a
// field of a document in that array.
const ambiguousFieldName mongoerr.Code = 16746

// pathKeys are the keys one field of an index holds for a document, as
// MongoDB's btree key generator makes them.
type pathKeys struct {
	vals []bsoncore.Value
	// multi is set when an array was expanded into several keys, or an
	// empty one stood for its elements.
	multi bool
}

// keysForPath generates the keys of path in doc: the value the path reaches
// through documents; for an array, each element (an empty array gives
// undefined) or, in the middle of the path, the keys of the rest of the path
// in each element document. A numeric component that names an element of
// such an array selects that element instead, and an array selected that
// way at the end of the path is one key, whole. MongoDB refuses a document
// in which an element document also has a field of that name.
// Missing values give no key.
func keysForPath(doc bsoncore.Document, path string) (pathKeys, error) {
	var k pathKeys
	err := k.collect(doc, strings.Split(path, "."))
	return k, err
}

// collect adds the keys of the path parts in obj, a document or, for an
// array element that is not one, nil.
func (k *pathKeys) collect(obj bsoncore.Document, parts []string) error {
	v, rest := alongPath(obj, parts)
	return k.add(v, rest, false)
}

// add adds the keys of v, the value reached before the path rest; selected
// tells an array selected by position, which is not expanded.
func (k *pathKeys) add(v bsoncore.Value, rest []string, selected bool) error {
	switch {
	case v.Type == 0:
		return nil
	case v.Type != bsoncore.TypeArray:
		k.vals = append(k.vals, v)
		return nil
	}
	elems, err := bsoncore.Array(v.Data).Values()
	if err != nil {
		return err
	}
	if len(elems) == 0 {
		k.multi = k.multi || !selected
		if len(rest) == 0 {
			k.vals = append(k.vals, undefinedValue)
		}
		return nil
	}
	if len(rest) == 0 {
		if selected {
			k.vals = append(k.vals, v)
			return nil
		}
		k.multi = true
		k.vals = append(k.vals, elems...)
		return nil
	}
	if e, err := bsoncore.Document(v.Data).LookupErr(rest[0]); err == nil {
		// The component selects element e, for every element alike.
		for _, other := range elems {
			if d, ok := other.DocumentOK(); ok {
				if _, err := d.LookupErr(rest[0]); err == nil {
					return mongoerr.New(ambiguousFieldName, "Ambiguous field name found in array (do not use numeric field names in embedded elements in an array), field: '%s' for array: %s", rest[0], bsoncore.Document(v.Data))
				}
			}
		}
		reached, after := alongPath(bsoncore.Document(v.Data), rest)
		return k.add(reached, after, e.Type == bsoncore.TypeArray)
	}
	k.multi = true
	for _, e := range elems {
		elemDoc, _ := e.DocumentOK()
		if err := k.collect(elemDoc, rest); err != nil {
			return err
		}
	}
	return nil
}

// alongPath follows parts through documents from obj and returns the value
// reached, stopping early at an array, with the parts left after it. A
// missing field, or a scalar before the end, reaches nothing (Type 0).
func alongPath(obj bsoncore.Document, parts []string) (bsoncore.Value, []string) {
	for {
		v, err := obj.LookupErr(parts[0])
		if err != nil {
			return bsoncore.Value{}, nil
		}
		parts = parts[1:]
		switch {
		case v.Type == bsoncore.TypeArray || len(parts) == 0:
			return v, parts
		case v.Type != bsoncore.TypeEmbeddedDocument:
			return bsoncore.Value{}, nil
		}
		obj = v.Document()
	}
}
