package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// rawValue is v as a BSON value, the way a command's field holds it.
func rawValue(t *testing.T, v any) bson.RawValue {
	t.Helper()
	doc, err := bson.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(doc).Lookup("v")
}

// wantErr checks that err is MongoDB's error code with msg.
func wantErr(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	e, ok := mongoerr.As(err)
	if !ok || e.Code != code || e.Msg != msg {
		t.Errorf("got %v, want %d %q", err, code, msg)
	}
}
