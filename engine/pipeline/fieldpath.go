package pipeline

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// The field paths of the stages that join: localField, foreignField,
// connectFromField and connectToField name values to join on; as and
// depthField name where a result goes.

// parsePath checks a field path of a stage's option and splits it.
func parsePath(p string) ([]string, error) {
	if p == "" {
		return nil, mongoerr.New(mongoerr.Code(40352), "FieldPath cannot be constructed with empty string")
	}
	if strings.HasPrefix(p, "$") {
		return nil, mongoerr.New(mongoerr.Code(16410), "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	}
	parts := strings.Split(p, ".")
	for _, part := range parts {
		if err := bsonvalue.CheckFieldName(part); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// valuesAtPath calls fn with every value at path in doc, as MongoDB
// gathers the values a join compares: a numeric component after an array
// is a position in it ("a.0"), other components look into each document
// of an array, and an array at the end gives its elements rather than
// itself. A path that reaches nothing gives nothing.
func valuesAtPath(doc []byte, path []string, fn func(bsoncore.Value)) {
	v, _ := bsonvalue.Lookup(doc, path[0])
	rest := path[1:]
	for len(rest) > 0 && v.Type == bsoncore.TypeArray && isPosition(rest[0]) {
		v = elementAt(v.Data, rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 {
		trailing(v, fn)
		return
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		valuesAtPath(v.Data, rest, fn)
	case bsoncore.TypeArray:
		it := bsonvalue.ElementsOf(v.Data)
		for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
			if e.Type == bsoncore.TypeEmbeddedDocument {
				valuesAtPath(e.Data, rest, fn)
			}
		}
	}
}

// trailing calls fn with the value at the end of a path: the elements of
// an array, nothing for a missing value.
func trailing(v bsoncore.Value, fn func(bsoncore.Value)) {
	switch v.Type {
	case 0:
	case bsoncore.TypeArray:
		it := bsonvalue.ElementsOf(v.Data)
		for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
			fn(e)
		}
	default:
		fn(v)
	}
}

// isPosition reports whether a path component is an array position:
// digits without a leading zero, or "0".
func isPosition(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// elementAt is the element of an array at a position, or Missing.
func elementAt(arr []byte, pos string) bsoncore.Value {
	v, _ := bsonvalue.Lookup(arr, pos)
	return v
}

// withField returns doc with the field at path set to v, in place if it is
// there and at the end if not; a value on the way that is not a document
// becomes one, as a stage that adds its output to a document does.
func withField(doc []byte, path []string, v bsoncore.Value) bson.Raw {
	b := bsoncore.NewDocumentBuilder()
	done := false
	it := bsonvalue.ElementsOf(doc)
	for name, e, ok := it.Next(); ok; name, e, ok = it.Next() {
		if string(name) != path[0] {
			b.AppendValue(string(name), e)
			continue
		}
		if done {
			continue // a duplicate field name: the first one takes the value
		}
		done = true
		b.AppendValue(path[0], nested(e, path[1:], v))
	}
	if !done {
		b.AppendValue(path[0], nested(bsonvalue.Missing, path[1:], v))
	}
	return bson.Raw(b.Build())
}

// nested is the value old becomes when rest of a path below it is set to v.
func nested(old bsoncore.Value, rest []string, v bsoncore.Value) bsoncore.Value {
	if len(rest) == 0 {
		return v
	}
	inner := values.EmptyDoc
	if old.Type == bsoncore.TypeEmbeddedDocument {
		inner = old.Data
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: withField(inner, rest, v)}
}
