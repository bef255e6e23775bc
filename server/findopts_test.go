package server

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/command"
	"github.com/lethedb/lethe/mongoerr"
)

func TestFindOptionGetters(t *testing.T) {
	_, err := command.NonNegative("find", "skip", rawValue(t, -0.5))
	if err != nil {
		t.Errorf("command.NonNegative(-0.5) = %v: it truncates to 0", err)
	}
	_, err = command.NonNegative("find", "limit", rawValue(t, int64(-3)))
	wantErr(t, err, command.CodeOutOfRange, "BSON field 'limit' value must be >= 0, actual value '-3'")

	if b, err := command.StrictBool("singleBatch", rawValue(t, true)); !b || err != nil {
		t.Errorf("command.StrictBool(true) = %v, %v", b, err)
	}
	_, err = command.StrictBool("singleBatch", rawValue(t, 1.0))
	wantErr(t, err, mongoerr.TypeMismatch, "Field 'singleBatch' should be a boolean value, but found: double")

	_, err = command.Object("filter", rawValue(t, bson.A{}))
	wantErr(t, err, mongoerr.TypeMismatch, "Expected field filterto be of type object")

	if h, err := command.Hint(rawValue(t, bson.D{})); h.Type != 0 || err != nil {
		t.Errorf("command.Hint({}) = %v, %v: want no hint", h, err)
	}
	if h, err := command.Hint(rawValue(t, "a_1")); h.StringValue() != "a_1" || err != nil {
		t.Errorf("command.Hint(a_1) = %v, %v", h, err)
	}
	_, err = command.Hint(rawValue(t, int32(1)))
	wantErr(t, err, mongoerr.FailedToParse, "Hint must be a string or an object")
}

func TestMaxTime(t *testing.T) {
	dec, _ := bson.ParseDecimal128("250")
	for _, c := range []struct {
		v    any
		want time.Duration
		code mongoerr.Code
		msg  string
	}{
		{int32(5), 5 * time.Millisecond, 0, ""},
		{dec, 250 * time.Millisecond, 0, ""},
		{2.0, 2 * time.Millisecond, 0, ""},
		{"1", 0, mongoerr.BadValue, "maxTimeMS must be a number"},
		{int64(-1), 0, mongoerr.BadValue, "-1 value for maxTimeMS is out of range"},
		{int64(math.MaxInt32) + 1, 0, mongoerr.BadValue, "2147483648 value for maxTimeMS is out of range"},
		{1.5, 0, mongoerr.BadValue, "maxTimeMS has non-integral value"},
		{math.NaN(), 0, mongoerr.BadValue, "maxTimeMS has non-integral value"},
		// The range is checked before the fraction, as MongoDB does.
		{-1.5, 0, mongoerr.BadValue, "-1 value for maxTimeMS is out of range"},
	} {
		body, _ := bson.Marshal(bson.D{{Key: "count", Value: "c"}, {Key: "maxTimeMS", Value: c.v}})
		got, err := maxTime("count", body)
		if c.code != 0 {
			wantErr(t, err, c.code, c.msg)
			continue
		}
		if got != c.want || err != nil {
			t.Errorf("maxTime(%v) = %v, %v, want %v", c.v, got, err, c.want)
		}
	}
}
