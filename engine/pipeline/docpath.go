package pipeline

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// The stages that name a field of their documents ($unwind's path, the
// fields of $densify and $fill) read and write it as a path of
// subdocuments, without looking into arrays, as MongoDB's documents do.

// fieldPath parses a path written as "$a.b" (dollar true) or "a.b".
func fieldPath(s string, dollar bool) ([]string, error) {
	if dollar {
		s = strings.TrimPrefix(s, "$")
	}
	if s == "" {
		return nil, mongoerr.New(40352, "FieldPath cannot be constructed with empty string")
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if err := bsonvalue.CheckFieldName(p); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// lookupPath is the value at path in doc, Type 0 when missing.
func lookupPath(doc []byte, path []string) bsoncore.Value {
	for i, p := range path {
		v, ok := bsonvalue.Lookup(doc, p)
		if !ok {
			return bsoncore.Value{}
		}
		if i == len(path)-1 {
			return v
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return bsoncore.Value{}
		}
		doc = v.Data
	}
	return bsoncore.Value{}
}

// setPath returns doc with the value at path set to v, in place of the
// field it replaces or after the last field; v of Type 0 removes it. A
// missing or non-document step on the way becomes a document.
func setPath(doc []byte, path []string, v bsoncore.Value) []byte {
	b := bsoncore.NewDocumentBuilder()
	found := false
	it := bsonvalue.ElementsOf(doc)
	for {
		k, val, ok := it.Next()
		if !ok {
			break
		}
		key := string(k)
		if key != path[0] {
			b.AppendValue(key, val)
			continue
		}
		found = true
		if len(path) == 1 {
			if v.Type != 0 {
				b.AppendValue(key, v)
			}
			continue
		}
		var sub []byte = emptyDoc
		if val.Type == bsoncore.TypeEmbeddedDocument {
			sub = val.Data
		}
		b.AppendDocument(key, setPath(sub, path[1:], v))
	}
	if !found && v.Type != 0 {
		if len(path) == 1 {
			b.AppendValue(path[0], v)
		} else {
			b.AppendDocument(path[0], setPath(emptyDoc, path[1:], v))
		}
	}
	return b.Build()
}

// typeName names the type of v for errors; missing is "missing".
func typeName(v bsoncore.Value) string {
	if v.Type == 0 {
		return "missing"
	}
	return bsonvalue.TypeName(v.Type)
}

// specError is a parse error of a stage's specification.
func specError(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}
