package pipeline

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
)

// unwindStage is $unwind: a document for each element of an array.
type unwindStage struct {
	path     []string
	index    []string // includeArrayIndex, nil for none
	preserve bool     // preserveNullAndEmptyArrays
}

func compileUnwind(_ *compiler, _ string, arg bson.RawValue) (stage, error) {
	s := &unwindStage{}
	var path string
	havePath := false
	switch arg.Type {
	case bson.TypeString:
		path, havePath = arg.StringValue(), true
	case bson.TypeEmbeddedDocument:
		elems, _ := arg.Document().Elements()
		for _, el := range elems {
			v := el.Value()
			switch el.Key() {
			case "path":
				p, ok := v.StringValueOK()
				if !ok {
					return nil, specError(28808, "expected a string as the path for $unwind stage, got %s", bsonvalue.TypeName(bsoncore.Type(v.Type)))
				}
				path, havePath = p, true
			case "preserveNullAndEmptyArrays":
				b, ok := v.BooleanOK()
				if !ok {
					return nil, specError(28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s", bsonvalue.TypeName(bsoncore.Type(v.Type)))
				}
				s.preserve = b
			case "includeArrayIndex":
				idx, ok := v.StringValueOK()
				if !ok || idx == "" {
					return nil, specError(28810, "expected a non-empty string for the includeArrayIndex option to $unwind stage, got %s", bsonvalue.TypeName(bsoncore.Type(v.Type)))
				}
				if idx[0] == '$' {
					return nil, specError(28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", idx)
				}
				parts, err := fieldPath(idx, false)
				if err != nil {
					return nil, err
				}
				s.index = parts
			default:
				return nil, specError(28811, "unrecognized option to $unwind stage: %s", el.Key())
			}
		}
		if !havePath {
			return nil, specError(28812, "no path specified to $unwind stage")
		}
	default:
		return nil, specError(15981, "expected either a string or an object as specification for $unwind stage, got %s", bsonvalue.TypeName(bsoncore.Type(arg.Type)))
	}
	if path == "" || path[0] != '$' {
		return nil, specError(28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	parts, err := fieldPath(path, true)
	if err != nil {
		return nil, err
	}
	s.path = parts
	return s, nil
}

func (s *unwindStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	h := held{limit: out, n: int64(sizeOf(docs))}
	var res []bson.Raw
	emit := func(d []byte) error {
		res = append(res, d)
		return h.add(len(d))
	}
	for j, d := range docs {
		if j%256 == 255 && r.ctx.Err() != nil {
			return nil, r.ctx.Err()
		}
		v := lookupPath(d, s.path)
		switch v.Type {
		case bsoncore.TypeArray:
			it := bsonvalue.ElementsOf(v.Data)
			n := int64(0)
			for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
				if err := emit(s.withIndex(values.SetPath(d, s.path, e), values.Int64(n))); err != nil {
					return nil, err
				}
				n++
			}
			if n == 0 && s.preserve {
				// An empty array leaves no field behind.
				if err := emit(s.withIndex(values.SetPath(d, s.path, bsoncore.Value{}), values.Null)); err != nil {
					return nil, err
				}
			}
		case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
			if s.preserve {
				if err := emit(s.withIndex(d, values.Null)); err != nil {
					return nil, err
				}
			}
		default:
			// A value that is not an array is an array of itself.
			if err := emit(s.withIndex(d, values.Null)); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// withIndex sets includeArrayIndex, if asked for.
func (s *unwindStage) withIndex(d []byte, idx bsoncore.Value) bson.Raw {
	if s.index == nil {
		return d
	}
	return values.SetPath(d, s.index, idx)
}
