package catalog

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// checkIndexSpec applies the checks of MongoDB's validateIndexSpec that
// createIndexes owes its clients beyond the engine's own: a spec must name
// its index, since only the shell and drivers derive a default name, and
// the _id index takes no options but its name, version and collation
// (src/mongo/db/catalog/index_key_validate.cpp, validateIndexSpec and
// validateIdIndexSpec).
func checkIndexSpec(spec bson.Raw) error {
	key, err := spec.LookupErr("key")
	if err != nil {
		return nil // the engine reports the missing key first, as MongoDB does
	}
	for field := range command.Fields(spec) {
		if !engine.IsIndexOption(string(field)) {
			return nil // and unknown fields, which MongoDB checks before all else
		}
	}
	if _, err := spec.LookupErr("name"); err != nil {
		return mongoerr.New(mongoerr.FailedToParse,
			"Error in specification %s :: caused by :: The 'name' field is a required property of an index specification", spec.String())
	}
	if !isIDIndexPattern(key) {
		return nil
	}
	for field := range command.Fields(spec) {
		switch string(field) {
		case "key", "name", "v", "ns", "collation":
		default:
			return mongoerr.New(mongoerr.InvalidIndexSpecificationOption,
				"The field '%s' is not valid for an _id index specification. Specification: %s", field, spec.String())
		}
	}
	// {_id: -1} counts as the _id pattern for the checks above, but the
	// _id index itself is ascending.
	if n, _ := key.Document().Index(0).Value().AsInt64OK(); n != 1 {
		if f, ok := key.Document().Index(0).Value().DoubleOK(); !ok || f != 1 {
			return mongoerr.New(mongoerr.BadValue, "The field 'key' for an _id index must be {_id: 1}, but got %s", key.Document().String())
		}
	}
	return nil
}

// isIDIndexPattern reports whether key is {_id: 1} or {_id: -1}, the
// patterns MongoDB treats as the _id index; {_id: "hashed"} is not.
func isIDIndexPattern(key bson.RawValue) bool {
	doc, ok := key.DocumentOK()
	if !ok {
		return false
	}
	elems, err := doc.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return false
	}
	n, ok := elems[0].Value().AsInt64OK()
	if !ok {
		f, isFloat := elems[0].Value().DoubleOK()
		n, ok = int64(f), isFloat
	}
	return ok && (n == 1 || n == -1)
}
