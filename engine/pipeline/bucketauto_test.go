package pipeline

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestPowersOfTwoRounding(t *testing.T) {
	// MongoDB's POWERSOF2 rounder raises 2 to an integer with $pow: the
	// cases of its granularity rounder's tests, with their result types.
	dec := func(s string) any { d, _ := bson.ParseDecimal128(s); return d }
	cases := []struct {
		in, want any
		up       bool
	}{
		{0.5, int32(1), true},
		{int32(1), int32(2), true},
		{int32(3), int32(4), true},
		{int32(8), int32(16), true},
		{int64(1 << 61), int64(1 << 62), true},
		{int64(1<<62 + 1), float64(1 << 63), true},
		{int64(1<<62 - 1), int64(1 << 62), true},
		{int32(1 << 30), int64(1 << 31), true},
		{0.1, 0.125, true},
		{0.2, 0.25, true},
		{0.3, 0.5, true},
		{1.5, int32(2), true},
		{3.6, int32(4), true},
		{5.7, int32(8), true},
		{dec("0.12"), dec("0.125"), true},
		{int32(16), int32(8), false},
		{int32(2), int32(1), false},
		{int32(1), 0.5, false},
		{0.5, 0.25, false},
		{int32(10), int32(8), false},
		{int32(3), int32(2), false},
		{0.7, 0.5, false},
		{0.17, 0.125, false},
		{float64(1 << 63), int64(1 << 62), false},
		{int64(1 << 31), int32(1 << 30), false},
		{int64(1<<62 + 1), int64(1 << 62), false},
		{dec("0.13"), dec("0.125"), false},
		{dec("100"), dec("64"), false},
	}
	value := func(x any) bsoncore.Value {
		typ, data, err := bson.MarshalValue(x)
		if err != nil {
			t.Fatal(err)
		}
		return bsoncore.Value{Type: bsoncore.Type(typ), Data: data}
	}
	for _, c := range cases {
		got := powerOfTwo(value(c.in), c.up)
		if want := value(c.want); got.Type != want.Type || got.String() != want.String() {
			t.Errorf("up %v of %v: %s (%s), want %s (%s)", c.up, c.in, got, got.Type, want, want.Type)
		}
	}
}
