package record

import (
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// NonConformantBSONWarning is the validate command's warning for documents
// that parse but break the BSON specification, such as strings that are
// not UTF-8 (kBSONValidationNonConformantReason in MongoDB's
// src/mongo/db/catalog/validate_adaptor.cpp).
const NonConformantBSONWarning = "Detected one or more documents in this collection not conformant to BSON specifications. For more info, see logs with log id 6825900"

// ConformantBSON reports whether every field name and string of doc, at
// any depth, is valid UTF-8, as BSON requires and MongoDB's full BSON
// validation (BSONValidateMode::kFull) checks. Writes store what clients
// send without this check, as mongod's do; validate finds it afterwards.
func ConformantBSON(doc bsoncore.Document) bool {
	elems, err := doc.Elements()
	if err != nil {
		return false
	}
	for _, e := range elems {
		if !utf8.Valid(e.KeyBytes()) || !conformantValue(e.Value()) {
			return false
		}
	}
	return true
}

func conformantValue(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeJavaScript, bsoncore.TypeSymbol:
		s, _, ok := bsoncore.ReadString(v.Data)
		return ok && utf8.ValidString(s)
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return ConformantBSON(v.Data)
	case bsoncore.TypeRegex:
		pattern, options, ok := v.RegexOK()
		return ok && utf8.ValidString(pattern) && utf8.ValidString(options)
	case bsoncore.TypeDBPointer:
		ns, _, ok := v.DBPointerOK()
		return ok && utf8.ValidString(ns)
	case bsoncore.TypeCodeWithScope:
		code, scope, ok := v.CodeWithScopeOK()
		return ok && utf8.ValidString(code) && ConformantBSON(scope)
	}
	return true
}
