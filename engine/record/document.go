package record

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// MaxDocumentSize is MongoDB's BSON document limit.
const MaxDocumentSize = 16 * 1024 * 1024

// PrepareInsert validates a document for insertion and returns it with an
// _id, which comes first as in MongoDB.
func PrepareInsert(raw bson.Raw) (bson.Raw, bsoncore.Value, error) {
	if len(raw) > MaxDocumentSize {
		return nil, bsoncore.Value{}, mongoerr.New(mongoerr.BadValue, "object to insert too large. size in bytes: %d, max size: %d", len(raw), MaxDocumentSize)
	}
	if err := CheckStoredDoc(raw); err != nil {
		return nil, bsoncore.Value{}, err
	}
	// Most documents come with their _id first, which CheckStoredDoc has
	// read and validated already.
	if n, _, _ := bsoncore.ReadLength(raw); n > 5 {
		if first, _, ok := bsoncore.ReadElement(raw[4:]); ok && first.Key() == "_id" {
			return raw, first.Value(), nil
		}
	}
	elems, err := bsoncore.Document(raw).Elements()
	if err != nil {
		return nil, bsoncore.Value{}, mongoerr.New(mongoerr.InvalidBSON, "invalid document: %v", err)
	}
	idx := -1
	for i, el := range elems {
		if el.Key() == "_id" {
			idx = i
			break
		}
	}
	out := make([]byte, 0, len(raw)+17)
	var di int32
	di, out = bsoncore.AppendDocumentStart(out)
	if idx < 0 {
		oid := bson.NewObjectID()
		out = bsoncore.AppendObjectIDElement(out, "_id", oid)
	} else {
		out = append(out, elems[idx]...)
	}
	for i, el := range elems {
		if i != idx {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, di)
	return out, bsoncore.Document(out).Index(0).Value(), nil
}

// CheckStoredDoc enforces the rules every stored document obeys, whether it
// comes from an insert, a replacement, an update or an upsert: one valid
// _id at most, and no root-level _ts, which is the server's own (TTL spec
// rule 3).
func CheckStoredDoc(raw bson.Raw) error {
	if len(raw) > MaxDocumentSize {
		return mongoerr.New(mongoerr.BSONObjectTooLarge, "Resulting document after update is larger than %d", MaxDocumentSize)
	}
	// The elements as Document.Elements reads and validates them, without
	// a slice of them: this runs on every write.
	length, rem, ok := bsoncore.ReadLength(raw)
	if !ok {
		return invalidBSON(bsoncore.NewInsufficientBytesError(raw, rem))
	}
	hadID := false
	for length -= 4; length > 1; {
		var el bsoncore.Element
		el, rem, ok = bsoncore.ReadElement(rem)
		length -= int32(len(el))
		if !ok {
			return invalidBSON(bsoncore.NewInsufficientBytesError(raw, rem))
		}
		if err := el.Validate(); err != nil {
			return invalidBSON(err)
		}
		switch el.Key() {
		case TSField:
			return mongoerr.New(mongoerr.BadValue, "_ts is a reserved system field and cannot be written")
		case "_id":
			if err := CheckID(el.Value()); err != nil {
				return err
			}
			if hadID {
				return mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
			}
			hadID = true
		}
	}
	return nil
}

func invalidBSON(err error) error {
	return mongoerr.New(mongoerr.InvalidBSON, "invalid document: %v", err)
}

// CheckID refuses the _id values MongoDB cannot store: those that match
// differently from how they compare (array, regex, undefined), and documents
// with $-prefixed field names at any depth, other than a DBRef's.
func CheckID(id bsoncore.Value) error {
	switch id.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIdField, "The '_id' value cannot be of type %s", bsonvalue.TypeName(id.Type))
	case bsoncore.TypeEmbeddedDocument:
		if name := dollarPrefixedField(id.Data); name != "" {
			return mongoerr.New(mongoerr.DollarPrefixedFieldName, "_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", name)
		}
	}
	return nil
}

// dollarPrefixedField returns the first $-prefixed field name in doc or its
// subdocuments and arrays that is not a DBRef field; "" if none.
func dollarPrefixedField(doc bsoncore.Document) string {
	elems, _ := doc.Elements()
	for _, el := range elems {
		switch key := el.Key(); {
		case key == "$ref" || key == "$id" || key == "$db":
		case strings.HasPrefix(key, "$"):
			return key
		}
		switch v := el.Value(); v.Type {
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if name := dollarPrefixedField(v.Data); name != "" {
				return name
			}
		}
	}
	return ""
}

// IDOf returns the document's _id.
func IDOf(doc bson.Raw) bsoncore.Value {
	v, err := bsoncore.Document(doc).LookupErr("_id")
	if err != nil {
		return bsoncore.Value{}
	}
	return v
}
