package server

import (
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// The statements of update and delete are parsed in two steps, as mongod
// does. What its IDL parser checks (write_ops.idl: UpdateOpEntry and
// DeleteOpEntry are strict structs; update_modification and
// multi_delete_bool have their own deserializers in write_ops_parsers.cpp
// and write_ops.cpp) is checked for every statement before any runs: a
// statement that fails it fails the command, and nothing is written.
// Everything else (the query, update operators, pipeline stages, let and
// c, the collation's content) is parsed when the statement runs, in
// performUpdates/performDeletes of write_ops_exec.cpp, and its error is
// that statement's write error: the statements before it stay applied.

// updateStatement is one entry of update's updates array.
type updateStatement struct {
	spec      engine.UpdateSpec
	u         bson.RawValue
	af        []bson.Raw
	c         bson.Raw // constants of this statement, like the command's let
	collation bson.RawValue
}

// parseUpdateStatement checks what mongod's IDL parser checks of an
// update statement. MongoDB 7.0 has no sort in update statements (8.0
// added it): it is an unknown field.
func parseUpdateStatement(doc bson.Raw) (updateStatement, error) {
	var st updateStatement
	var err error
	haveQ, haveU := false, false
	for key, v := range command.Fields(doc) {
		switch string(key) {
		case "q":
			st.spec.Filter, err = command.Doc("update.updates", "q", v)
			haveQ = true
		case "u":
			st.u, haveU = v, true
			err = checkUpdateModification(v)
		case "upsert":
			st.spec.Upsert, err = command.Bool("update.updates", "upsert", v)
		case "multi":
			st.spec.Multi, err = command.Bool("update.updates", "multi", v)
		case "arrayFilters":
			st.af, err = docArray("update.updates", "arrayFilters", v)
		case "hint":
			st.spec.Hint, err = command.Hint(v)
		case "collation":
			st.collation, err = v, collationType(v)
		case "c":
			st.c, err = command.Doc("update.updates", "c", v)
		case "upsertSupplied":
		default:
			err = command.UnknownField("update.updates", key)
		}
		if err != nil {
			return st, err
		}
	}
	if !haveQ {
		return st, command.MissingField("update.updates", "q")
	}
	if !haveU {
		return st, command.MissingField("update.updates", "u")
	}
	return st, nil
}

// checkUpdateModification checks u as mongod's UpdateModification parser
// does: a document, or a pipeline of documents. The operators and stages
// are compiled when the statement runs.
func checkUpdateModification(u bson.RawValue) error {
	switch u.Type {
	case bson.TypeEmbeddedDocument:
		return nil
	case bson.TypeArray:
		vals, err := u.Array().Values()
		if err != nil {
			return mongoerr.New(mongoerr.InvalidBSON, "invalid update pipeline: %v", err)
		}
		for _, v := range vals {
			if v.Type != bson.TypeEmbeddedDocument {
				return mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
			}
		}
		return nil
	}
	return mongoerr.New(mongoerr.FailedToParse, "Update argument must be either an object or an array")
}

// docArray reads an array of documents.
func docArray(cmd, field string, v bson.RawValue) ([]bson.Raw, error) {
	arr, err := command.Array(cmd, field, v)
	if err != nil {
		return nil, err
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid %s array: %v", field, err)
	}
	docs := make([]bson.Raw, 0, len(vals))
	for i, el := range vals {
		d, ok := el.DocumentOK()
		if !ok {
			return nil, command.WrongType(cmd, field+"."+strconv.Itoa(i), el.Type, "object")
		}
		docs = append(docs, d)
	}
	return docs, nil
}

// collationType checks what the parser checks of a statement's collation,
// its type; its content is checked when the statement runs.
func collationType(v bson.RawValue) error {
	if v.Type != bson.TypeEmbeddedDocument {
		return command.WrongType("collation", "collation", v.Type, "object")
	}
	return nil
}

// deleteStatement is one entry of delete's deletes array.
type deleteStatement struct {
	filter    bson.Raw
	limit     int // 0 deletes every match, 1 the first
	hint      bson.RawValue
	collation bson.RawValue
}

// parseDeleteStatement checks what mongod's IDL parser checks of a delete
// statement: a limit other than 0 or 1 fails the command, as a missing q
// or limit does.
func parseDeleteStatement(raw bson.Raw) (deleteStatement, error) {
	var st deleteStatement
	var err error
	haveLimit := false
	for key, v := range command.Fields(raw) {
		switch string(key) {
		case "q":
			st.filter, err = command.Doc("delete.deletes", "q", v)
		case "limit":
			st.limit, err = deleteLimit(v)
			haveLimit = true
		case "hint":
			st.hint, err = command.Hint(v)
		case "collation":
			st.collation, err = v, collationType(v)
		default:
			err = command.UnknownField("delete.deletes", key)
		}
		if err != nil {
			return st, err
		}
	}
	if st.filter == nil {
		return st, command.MissingField("delete.deletes", "q")
	}
	if !haveLimit {
		return st, command.MissingField("delete.deletes", "limit")
	}
	return st, nil
}

// deleteLimit reads a delete statement's limit as mongod's
// readMultiDeleteProperty does: any type, read as a double, where what is
// not a number reads as 0, and the value must be 0 or 1.
func deleteLimit(v bson.RawValue) (int, error) {
	var f float64
	switch v.Type {
	case bson.TypeDouble:
		f = v.Double()
	case bson.TypeInt32:
		f = float64(v.Int32())
	case bson.TypeInt64:
		f = float64(v.Int64())
	case bson.TypeDecimal128:
		f = command.DecimalToFloat(v.Decimal128())
	}
	switch f {
	case 0:
		return 0, nil
	case 1:
		return 1, nil
	}
	return 0, mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", cppDouble(f))
}

// cppDouble formats f as a C++ stream does by default, as in mongod's
// messages: six significant digits, "nan" and "inf".
func cppDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}
