package expr

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// raw parses a document written in extended JSON.
func raw(t testing.TB, extJSON string) bson.Raw {
	t.Helper()
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(extJSON), false, &doc); err != nil {
		t.Fatalf("%s: %v", extJSON, err)
	}
	return doc
}

// value parses a single value written in extended JSON.
func value(t testing.TB, extJSON string) bsoncore.Value {
	t.Helper()
	return bsoncore.Document(raw(t, `{"v": `+extJSON+`}`)).Lookup("v")
}
