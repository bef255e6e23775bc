package queryargs

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

func TestCheckMinMax(t *testing.T) {
	doc := func(d bson.D) bson.Raw { b, _ := bson.Marshal(d); return b }
	if err := CheckMinMax(doc(bson.D{{Key: "a", Value: 1}}), nil); err != nil {
		t.Errorf("min alone: %v", err)
	}
	if err := CheckMinMax(doc(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}), doc(bson.D{{Key: "a", Value: 5}, {Key: "b", Value: 0}})); err != nil {
		t.Errorf("same fields: %v", err)
	}
	wantErr(t, CheckMinMax(doc(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}), doc(bson.D{{Key: "b", Value: 1}, {Key: "a", Value: 1}})),
		51176, "min and max must have the same field names")
}

// wantErr checks that err is MongoDB's error code with msg.
func wantErr(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	e, ok := mongoerr.As(err)
	if !ok || e.Code != code || e.Msg != msg {
		t.Errorf("got %v, want %d %q", err, code, msg)
	}
}
