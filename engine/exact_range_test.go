package engine

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/query"
)

// TestExactIDRanges: a find by a range of _id returns what the filter
// matches, whether the plan skips testing the filter (markExact) or not,
// over _ids of many types: NaN and the infinities among the numbers, which
// are equal across their types; strings, one a prefix of another; and
// documents, dates, booleans, ObjectIds, null and MinKey. The plans of
// ranges with a lower bound of a number, or any bound of another type,
// are exact; a number's upper bound is not, since NaN, below every number
// in key order, matches no such bound. MongoDB drops the filter of bounds
// it builds exactly in the same way (EXACT tightness,
// src/mongo/db/query/index_bounds_builder.cpp).
func TestExactIDRanges(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	oid := bson.NewObjectIDFromTimestamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	date := bson.NewDateTimeFromTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dec3, _ := bson.ParseDecimal128("3")
	decNaN, _ := bson.ParseDecimal128("NaN")
	idValues := []any{math.NaN(), math.Inf(-1), int32(-5), int32(1), int64(2), 2.5, dec3, math.Inf(1),
		"a", "ab", "b", oid, date, false, true, bson.D{{Key: "k", Value: int32(1)}}, bson.D{{Key: "k", Value: "x"}}, nil, bson.MinKey{}}
	docs := make([]bson.Raw, len(idValues))
	for i, id := range idValues {
		docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "i", Value: int32(i)}})
	}
	if _, err := e.Insert(ctx, "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	bounds := []any{math.NaN(), decNaN, math.Inf(-1), int32(2), 2.0, dec3, "a", "ab", oid, date, true, bson.D{{Key: "k", Value: int32(1)}}}
	var filters []bson.D
	for _, op := range []string{"$gt", "$gte", "$lt", "$lte"} {
		for _, v := range bounds {
			filters = append(filters, bson.D{{Key: "_id", Value: bson.D{{Key: op, Value: v}}}})
		}
	}
	filters = append(filters,
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: int32(1)}, {Key: "$lt", Value: int32(3)}}}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: "a"}, {Key: "$lte", Value: "b"}}}},
		bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: "a"}}}}, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: "b"}}}}}}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: int32(1)}}}, {Key: "i", Value: int32(4)}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: int32(1)}, {Key: "$lt", Value: nil}}}},
	)
	st := e.collection("db", "c").st()
	for _, fd := range filters {
		var raw bson.Raw
		raw, _ = bson.Marshal(fd)
		f, err := query.Compile(raw)
		if err != nil {
			t.Fatal(err)
		}
		var want []int32
		for _, d := range docs {
			if f.Match(d) {
				want = append(want, d.Lookup("i").Int32())
			}
		}
		got, err := findAll(t, e, "c", FindSpec{Filter: raw})
		if err != nil {
			t.Fatalf("find %s: %v", raw.String(), err)
		}
		var gotIdx []int32
		for _, d := range got {
			gotIdx = append(gotIdx, d.Lookup("i").Int32())
		}
		slices.Sort(want)
		slices.Sort(gotIdx)
		if !slices.Equal(gotIdx, want) {
			t.Errorf("find %s returned the documents %v; the filter matches %v", raw.String(), gotIdx, want)
		}
	}
	for _, c := range []struct {
		filter string
		exact  bool
	}{
		{`{"_id": {"$gte": 2}}`, true},
		{`{"_id": {"$gt": "a", "$lte": "b"}}`, true},
		{`{"_id": {"$lt": {"$date": "2027-01-01T00:00:00Z"}}}`, true},
		{`{"_id": {"$lt": 2}}`, false},
		{`{"_id": {"$gte": {"$numberDouble": "NaN"}}}`, false},
		{`{"_id": {"$gte": 2}, "i": 4}`, false},
		{`{"_id": {"$gte": 2, "$lt": null}}`, false}, // null bounds no key range
		{`{"_id": {"$gte": 2}, "$comment": "c"}`, true},
	} {
		var raw bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(c.filter), false, &raw); err != nil {
			t.Fatal(err)
		}
		f, err := query.Compile(raw)
		if err != nil {
			t.Fatal(err)
		}
		p, err := st.choosePlan(f, nil, bson.RawValue{})
		if err != nil {
			t.Fatal(err)
		}
		if p.exact != c.exact || c.exact && p.kind != planIDRange {
			t.Errorf("%s: plan %v exact %v; want exact %v", c.filter, p.stage(), p.exact, c.exact)
		}
	}
}
