package accum

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
)

// TestMinMaxNKeepEqualValuesAsMongoDB checks which of equal values $minN
// and $maxN keep, and in what order. MongoDB's AccumulatorMinMaxN holds
// its values in one ascending multiset, where a value goes after those
// equal to it, lets a value in only if it is strictly better than the
// worst kept, and reads the multiset backwards for $maxN
// (src/mongo/db/pipeline/accumulator_multi.cpp). Equal values of
// different types show it without a collation, and strings that differ in
// case under a strength 2 one.
func TestMinMaxNKeepEqualValuesAsMongoDB(t *testing.T) {
	i32 := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}
	dbl := values.Double(1)
	i64 := values.Int64(1)
	str := func(s string) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
	}
	en2, err := collation.Parse(bson.Raw(bsoncore.NewDocumentBuilder().AppendString("locale", "en").AppendInt32("strength", 2).Build()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op   string
		coll *collation.Collator
		in   []bsoncore.Value
		want []bsoncore.Value
	}{
		{"$minN", nil, []bsoncore.Value{i32, dbl, i64}, []bsoncore.Value{i32, dbl}},
		{"$maxN", nil, []bsoncore.Value{i32, dbl, i64}, []bsoncore.Value{dbl, i32}},
		{"$minN", en2, []bsoncore.Value{str("b"), str("A"), str("a"), str("B")}, []bsoncore.Value{str("A"), str("a"), str("b")}},
		{"$maxN", en2, []bsoncore.Value{str("a"), str("B"), str("A"), str("b")}, []bsoncore.Value{str("b"), str("B")}},
		{"$maxN", nil, []bsoncore.Value{str("a"), str("B"), str("A"), str("b")}, []bsoncore.Value{str("b"), str("a")}},
	} {
		n := int64(len(tc.want))
		a := &nAcc{op: tc.op, nArg: nArg{n: n}, coll: tc.coll}
		for _, v := range tc.in {
			if _, err := a.take(v); err != nil {
				t.Fatal(err)
			}
		}
		got := a.values
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].Type == tc.want[i].Type && string(got[i].Data) == string(tc.want[i].Data)
		}
		if !ok {
			t.Errorf("%s %d of %v under %v: %v, want %v", tc.op, n, tc.in, tc.coll.Document(), got, tc.want)
		}
	}
}
