package writestmt

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/engine"
	"github.com/lethedb/lethe/mongoerr"
)

// Update is one entry of update's updates array.
type Update struct {
	// Spec has the statement's filter, upsert, multi and hint; the caller
	// compiles U into its Update.
	Spec engine.UpdateSpec
	// U is the update document or pipeline, as sent.
	U bson.RawValue
	// ArrayFilters are the statement's arrayFilters.
	ArrayFilters []bson.Raw
	// C are the constants of this statement, like the command's let.
	C bson.Raw
	// Collation is the statement's collation, as sent; zero if none.
	Collation bson.RawValue
}

// ParseUpdate checks what mongod's IDL parser checks of an
// update statement. MongoDB 7.0 has no sort in update statements (8.0
// added it): it is an unknown field.
func ParseUpdate(doc bson.Raw) (Update, error) {
	var st Update
	var err error
	haveQ, haveU := false, false
	for key, v := range command.Fields(doc) {
		switch string(key) {
		case "q":
			st.Spec.Filter, err = command.Doc("update.updates", "q", v)
			haveQ = true
		case "u":
			st.U, haveU = v, true
			err = checkUpdateModification(v)
		case "upsert":
			st.Spec.Upsert, err = command.Bool("update.updates", "upsert", v)
		case "multi":
			st.Spec.Multi, err = command.Bool("update.updates", "multi", v)
		case "arrayFilters":
			st.ArrayFilters, err = DocArray("update.updates", "arrayFilters", v)
		case "hint":
			st.Spec.Hint, err = command.Hint(v)
		case "collation":
			st.Collation, err = v, collationType(v)
		case "c":
			st.C, err = command.Doc("update.updates", "c", v)
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

// DocArray reads field, an array of documents, of command cmd.
func DocArray(cmd, field string, v bson.RawValue) ([]bson.Raw, error) {
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

// Delete is one entry of delete's deletes array.
type Delete struct {
	Filter bson.Raw
	Limit  int // 0 deletes every match, 1 the first
	Hint   bson.RawValue
	// Collation is the statement's collation, as sent; zero if none.
	Collation bson.RawValue
}

// ParseDelete checks what mongod's IDL parser checks of a delete
// statement: a limit other than 0 or 1 fails the command, as a missing q
// or limit does.
func ParseDelete(raw bson.Raw) (Delete, error) {
	var st Delete
	var err error
	haveLimit := false
	for key, v := range command.Fields(raw) {
		switch string(key) {
		case "q":
			st.Filter, err = command.Doc("delete.deletes", "q", v)
		case "limit":
			st.Limit, err = deleteLimit(v)
			haveLimit = true
		case "hint":
			st.Hint, err = command.Hint(v)
		case "collation":
			st.Collation, err = v, collationType(v)
		default:
			err = command.UnknownField("delete.deletes", key)
		}
		if err != nil {
			return st, err
		}
	}
	if st.Filter == nil {
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
	return 0, mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %s", bsonvalue.FormatDouble(f))
}
