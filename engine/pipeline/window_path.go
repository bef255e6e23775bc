package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// setPath returns doc with the field at path set to v, as $setWindowFields
// sets its output fields: a field that is there is replaced in place, one
// that is not is appended, and a value on the way that is not a document
// (an array too) is replaced by a document holding the rest of the path.
func setPath(doc []byte, path []string, v bsoncore.Value) []byte {
	if v.Type == 0 {
		v = nullValue
	}
	idx, b := bsoncore.AppendDocumentStart(nil)
	set := false
	elems, _ := bsoncore.Document(doc).Elements()
	for _, e := range elems {
		if e.Key() != path[0] {
			b = append(b, e...)
			continue
		}
		set = true
		b = appendPathValue(b, e.Value(), path, v)
	}
	if !set {
		b = appendPathValue(b, bsoncore.Value{}, path, v)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// appendPathValue appends the field path[0], whose value is old (Type 0
// when missing), with v set at the rest of path.
func appendPathValue(b []byte, old bsoncore.Value, path []string, v bsoncore.Value) []byte {
	if len(path) == 1 {
		return bsoncore.AppendValueElement(b, path[0], v)
	}
	inner := []byte(bsoncore.NewDocumentBuilder().Build())
	if old.Type == bsoncore.TypeEmbeddedDocument {
		inner = old.Data
	}
	return bsoncore.AppendDocumentElement(b, path[0], setPath(inner, path[1:], v))
}
