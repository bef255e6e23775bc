package project

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// CompileUnset parses the specification of a pipeline's $unset stage: a
// field path, or an array of them, to remove. It is an exclusion
// projection of those paths.
func CompileUnset(spec bsoncore.Value) (*Projection, error) {
	var paths []bsoncore.Value
	switch spec.Type {
	case bsoncore.TypeString:
		paths = []bsoncore.Value{spec}
	case bsoncore.TypeArray:
		paths, _ = spec.Array().Values()
		if len(paths) == 0 {
			return nil, mongoerr.New(mongoerr.Code(31119), "$unset specification must be a string or an array with at least one field")
		}
	default:
		return nil, mongoerr.New(mongoerr.Code(31002), "$unset specification must be a string or an array")
	}
	p := parser{stage: true, typ: exclusion}
	root := newNode()
	for _, v := range paths {
		path, ok := v.StringValueOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.Code(31120), "$unset specification must be a string or an array containing only string values")
		}
		if err := p.exclusion(root, nil, path); err != nil {
			return nil, err
		}
	}
	return &Projection{root: root, typ: exclusion}, nil
}
