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

// specError is a parse error of a stage's specification.
func specError(code mongoerr.Code, format string, args ...any) error {
	return mongoerr.New(code, format, args...)
}
