package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// DistinctValues collects the values distinct reports for path in doc, as
// MongoDB's distinct extracts them (extractAllElementsAlongPath): documents
// are entered by field name; an array in the middle of the path is entered
// by position when the next component is all digits, and otherwise through
// each of its elements that is a document or an array; an array at the end
// of the path contributes its elements. Unlike a query or an index key, a
// numeric component that names no element reaches nothing, and an array
// selected by position at the end of the path is expanded.
func DistinctValues(doc bsoncore.Document, path string) []bsoncore.Value {
	var vals []bsoncore.Value
	var walk func(obj bsoncore.Document, path string)
	walk = func(obj bsoncore.Document, path string) {
		left, next, more := strings.Cut(path, ".")
		v, err := obj.LookupErr(left)
		if err != nil {
			return
		}
		if !more {
			if arr, ok := v.ArrayOK(); ok {
				elems, _ := arr.Values()
				vals = append(vals, elems...)
				return
			}
			vals = append(vals, v)
			return
		}
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			walk(v.Document(), next)
		case bsoncore.TypeArray:
			if first, _, _ := strings.Cut(next, "."); allDigits(first) {
				walk(bsoncore.Document(v.Data), next)
				return
			}
			elems, _ := bsoncore.Array(v.Data).Values()
			for _, e := range elems {
				if e.Type == bsoncore.TypeEmbeddedDocument || e.Type == bsoncore.TypeArray {
					walk(bsoncore.Document(e.Data), next)
				}
			}
		}
	}
	walk(doc, path)
	return vals
}

// allDigits reports whether s is a nonempty run of decimal digits; leading
// zeros are allowed, though no array element is named so.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
