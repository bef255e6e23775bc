package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

// visitFunc receives each value a path reaches, with the index of the
// element of the outermost array that was traversed implicitly to reach it,
// or -1. A missing value has Type 0. Returning true stops the walk.
type visitFunc func(v bsoncore.Value, arrayIndex int) bool

// walk visits the values that the dotted path p reaches in doc, the way
// MongoDB's matcher sees them:
//
//   - a field that does not exist, or a path that runs into a scalar before
//     its end, yields a single missing value;
//   - a path that runs into an array in its middle continues into each
//     element that is a document, and a numeric component also selects the
//     array element at that position; nested arrays are not entered
//     implicitly, and elements that are neither yield nothing;
//   - an element selected by position at the end of the path is yielded as
//     it is, an array included: {"a.0": 1} does not match {a: [[1, 2]]};
//   - an array at the end of the path yields each of its elements and then
//     the array itself, unless leafArrays is false, when it yields only the
//     array ($size and $elemMatch look at the array as a whole).
//
// walk reports whether visit stopped it.
func walk(doc []byte, p []string, leafArrays bool, outer int, visit visitFunc) bool {
	v, ok := bsonvalue.Lookup(doc, p[0])
	if !ok {
		return visit(bsonvalue.Missing, outer)
	}
	if len(p) == 1 {
		if v.Type == bsoncore.TypeArray && leafArrays {
			return visitArray(v, outer, visit)
		}
		return visit(v, outer)
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return walk(v.Data, p[1:], leafArrays, outer, visit)
	case bsoncore.TypeArray:
		return walkArray(v.Data, p[1:], leafArrays, outer, visit)
	}
	return visit(bsonvalue.Missing, outer)
}

// walkArray continues the path rest, which is not empty, into the elements of
// an array met in the middle of a path.
func walkArray(arr []byte, rest []string, leafArrays bool, outer int, visit visitFunc) bool {
	position, positional := arrayPosition(rest[0])
	it := bsonvalue.ElementsOf(arr)
	for i := 0; ; i++ {
		_, e, ok := it.Next()
		if !ok {
			return false
		}
		at := outer
		if at < 0 {
			at = i
		}
		if e.Type == bsoncore.TypeEmbeddedDocument && walk(e.Data, rest, leafArrays, at, visit) {
			return true
		}
		if !positional || i != position {
			continue
		}
		// Selecting an element by position is not an implicit traversal, so
		// it does not report this array's index: MongoDB's positional
		// operator only refers to arrays the query traversed implicitly.
		switch {
		case len(rest) == 1:
			if visit(e, outer) {
				return true
			}
		case e.Type == bsoncore.TypeEmbeddedDocument:
			if walk(e.Data, rest[1:], leafArrays, outer, visit) {
				return true
			}
		case e.Type == bsoncore.TypeArray:
			if walkArray(e.Data, rest[1:], leafArrays, outer, visit) {
				return true
			}
		}
	}
}

// visitArray visits the elements of an array at the end of a path, then the
// array itself.
func visitArray(arr bsoncore.Value, outer int, visit visitFunc) bool {
	it := bsonvalue.ElementsOf(arr.Data)
	for i := 0; ; i++ {
		_, e, ok := it.Next()
		if !ok {
			break
		}
		at := outer
		if at < 0 {
			at = i
		}
		if visit(e, at) {
			return true
		}
	}
	return visit(arr, outer)
}

// arrayPosition parses a path component that can select an array element:
// decimal digits only, as array field names are written. "01" selects
// nothing, since no element is named that.
func arrayPosition(component string) (int, bool) {
	if component == "" || (len(component) > 1 && component[0] == '0') || len(component) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(component) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// splitPath splits a dotted path into its components.
func splitPath(path string) []string {
	return strings.Split(path, ".")
}

// WalkPath calls fn for every value the dotted path reaches in doc, following
// the rules MongoDB uses when matching: documents are entered by field name,
// arrays met in the middle of the path are traversed implicitly (into each
// element that is a document), a numeric component also selects the array
// element at that position, and an array at the end of the path is reported
// element by element and then as a whole. Missing values are not reported.
// fn returns false to stop the walk.
func WalkPath(doc bson.Raw, path string, fn func(v bsoncore.Value) bool) {
	walk(doc, splitPath(path), true, -1, func(v bsoncore.Value, _ int) bool {
		return v.Type != 0 && !fn(v)
	})
}
