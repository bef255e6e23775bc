package window

import (
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// setPathThroughArrays returns doc with the field at path set to v, as
// $setWindowFields sets its output fields: the way $addFields does, which
// unlike setPath (of the stages that name one field) looks into arrays. A
// field that is there is replaced in place, one that is not is appended,
// a missing v (Type 0) removes the field; on the way, an array has the
// rest of the path set in each of its elements, and any other value that
// is not a document is replaced by a document holding the rest of the
// path.
func setPathThroughArrays(doc []byte, path []string, v bsoncore.Value) []byte {
	idx, b := bsoncore.AppendDocumentStart(nil)
	set := false
	elems, _ := bsoncore.Document(doc).Elements()
	for _, e := range elems {
		if e.Key() != path[0] {
			b = append(b, e...)
			continue
		}
		set = true
		b = appendPathValue(b, path[0], e.Value(), path[1:], v)
	}
	if !set {
		b = appendPathValue(b, path[0], bsoncore.Value{}, path[1:], v)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// appendPathValue appends the field key, whose value is old (Type 0 when
// missing), with v set at rest below it.
func appendPathValue(b []byte, key string, old bsoncore.Value, rest []string, v bsoncore.Value) []byte {
	nv := setBelow(old, rest, v)
	if nv.Type == 0 {
		return b
	}
	return bsoncore.AppendValueElement(b, key, nv)
}

// setBelow returns old with v set at rest below it.
func setBelow(old bsoncore.Value, rest []string, v bsoncore.Value) bsoncore.Value {
	switch {
	case len(rest) == 0:
		return v
	case old.Type == bsoncore.TypeEmbeddedDocument:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: setPathThroughArrays(old.Data, rest, v)}
	case old.Type == bsoncore.TypeArray:
		elems, _ := bsoncore.Array(old.Data).Values()
		for i, e := range elems {
			elems[i] = setBelow(e, rest, v)
		}
		return values.ArrayOf(elems)
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: setPathThroughArrays(values.EmptyDoc, rest, v)}
}
