package engine

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/mongoerr"
)

// MaxDocumentSize is MongoDB's BSON document limit.
const MaxDocumentSize = 16 * 1024 * 1024

// prepareInsert validates a document for insertion and returns it with an
// _id, which comes first as in MongoDB.
func prepareInsert(raw bson.Raw) (bson.Raw, bsoncore.Value, error) {
	if len(raw) > MaxDocumentSize {
		return nil, bsoncore.Value{}, mongoerr.New(mongoerr.BadValue, "object to insert too large. size in bytes: %d, max size: %d", len(raw), MaxDocumentSize)
	}
	if err := checkStoredDoc(raw); err != nil {
		return nil, bsoncore.Value{}, err
	}
	doc := bsoncore.Document(raw)
	elems, err := doc.Elements()
	if err != nil {
		return nil, bsoncore.Value{}, mongoerr.New(mongoerr.InvalidBSON, "invalid document: %v", err)
	}
	if len(elems) > 0 && elems[0].Key() == "_id" {
		return raw, elems[0].Value(), nil
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
	var id bsoncore.Value
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
	id = bsoncore.Document(out).Index(0).Value()
	return out, id, nil
}

// checkStoredDoc enforces the rules every stored document obeys, whether it
// comes from an insert, a replacement or an update: a valid _id, and no
// root-level _ts, which is the server's own (TTL spec rule 3).
func checkStoredDoc(raw bson.Raw) error {
	if len(raw) > MaxDocumentSize {
		return mongoerr.New(mongoerr.BSONObjectTooLarge, "Resulting document after update is larger than %d", MaxDocumentSize)
	}
	if _, err := bsoncore.Document(raw).LookupErr(tsField); err == nil {
		return mongoerr.New(mongoerr.BadValue, "_ts is a reserved system field and cannot be written")
	}
	idv, err := bsoncore.Document(raw).LookupErr("_id")
	if err != nil {
		return nil
	}
	switch idv.Type {
	case bsoncore.TypeArray:
		return mongoerr.New(mongoerr.BadValue, "can't use an array for _id")
	case bsoncore.TypeRegex:
		return mongoerr.New(mongoerr.BadValue, "can't use a regex for _id")
	case bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.BadValue, "can't use a undefined for _id")
	}
	return nil
}

// idOf returns the document's _id.
func idOf(doc bson.Raw) bsoncore.Value {
	v, err := bsoncore.Document(doc).LookupErr("_id")
	if err != nil {
		return bsoncore.Value{}
	}
	return v
}
