package command

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

func rawValue(t *testing.T, v any) bson.RawValue {
	t.Helper()
	doc, err := bson.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	return bson.Raw(doc).Lookup("v")
}

func wantErr(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	e, ok := mongoerr.As(err)
	if !ok || e.Code != code || e.Msg != msg {
		t.Errorf("got %v, want %d %q", err, code, msg)
	}
}

func TestCmdArgs(t *testing.T) {
	body, _ := bson.Marshal(bson.D{
		{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{}}, {Key: "lsid", Value: bson.D{}},
		{Key: "$db", Value: "test"}, {Key: "limit", Value: 3}, {Key: "maxTimeMS", Value: 5},
	})
	var keys []string
	for k := range Args(body) {
		keys = append(keys, string(k))
	}
	if len(keys) != 2 || keys[0] != "filter" || keys[1] != "limit" {
		t.Errorf("cmdArgs keys = %v, want [filter limit]", keys)
	}
	wantErr(t, UnknownField("ping", []byte("x")), 40415, "BSON field 'ping.x' is an unknown field.")
	wantErr(t, MissingField("insert", "documents"), 40414, "BSON field 'insert.documents' is missing but a required field")
}

func TestArgGetters(t *testing.T) {
	if n, err := Int64("find", "limit", rawValue(t, 2.9)); n != 2 || err != nil {
		t.Errorf("Int64(2.9) = %d, %v", n, err)
	}
	if n, err := Int64("find", "limit", rawValue(t, math.Inf(1))); n != math.MaxInt64 || err != nil {
		t.Errorf("Int64(+Inf) = %d, %v", n, err)
	}
	dec, _ := bson.ParseDecimal128("12")
	if n, err := Int64("find", "limit", rawValue(t, dec)); n != 12 || err != nil {
		t.Errorf("Int64(decimal 12) = %d, %v", n, err)
	}
	_, err := Int64("find", "limit", rawValue(t, "5"))
	wantErr(t, err, mongoerr.TypeMismatch, "BSON field 'find.limit' is the wrong type 'string', expected types '[long, int, decimal, double]'")

	_, err = Int32("find", "batchSize", rawValue(t, int64(math.MaxInt32)+1))
	if mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Errorf("Int32(2^31) = %v, want BadValue", err)
	}
	if f, err := Float64("x", "y", rawValue(t, int32(3))); f != 3 || err != nil {
		t.Errorf("Float64(int32 3) = %v, %v", f, err)
	}

	if b, err := Bool("find", "singleBatch", rawValue(t, int32(1))); !b || err != nil {
		t.Errorf("Bool(1) = %v, %v", b, err)
	}
	_, err = Bool("find", "singleBatch", rawValue(t, "yes"))
	wantErr(t, err, mongoerr.TypeMismatch, "BSON field 'find.singleBatch' is the wrong type 'string', expected types '[bool, long, int, decimal, double]'")

	if s, err := String("find", "find", rawValue(t, "coll")); s != "coll" || err != nil {
		t.Errorf("argString = %q, %v", s, err)
	}
	_, err = Doc("find", "filter", rawValue(t, bson.A{}))
	wantErr(t, err, mongoerr.TypeMismatch, "BSON field 'find.filter' is the wrong type 'array', expected type 'object'")
	_, err = Array("insert", "documents", rawValue(t, bson.D{}))
	wantErr(t, err, mongoerr.TypeMismatch, "BSON field 'insert.documents' is the wrong type 'object', expected type 'array'")
	if _, err := String("x", "y", rawValue(t, nil)); err == nil {
		t.Error("String(null) succeeded")
	}
}
