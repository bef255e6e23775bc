package integration

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// findIDsHinted returns the _ids find returns for filter and sort, in
// order, through the index hint names ("" for none).
func findIDsHinted(t *testing.T, coll *mongo.Collection, filter, sort bson.D, hint string) []int32 {
	t.Helper()
	opts := options.Find()
	if sort != nil {
		opts.SetSort(sort)
	}
	if hint != "" {
		opts.SetHint(hint)
	}
	cur, err := coll.Find(context.Background(), filter, opts)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	out := []int32{}
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// TestNumericPathNestedArray: an array element selected by a numeric path
// component is compared as a whole, not element by element, so {"a.0": 1}
// does not match {a: [[1, 2], 3]} (MongoDB's own match_numeric_components.js
// expects {"a.0": 42} not to match {a: [[42]]}). An index on a.0 holds the
// nested array as one key and answers the same.
func TestNumericPathNestedArray(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("paths").Collection("nested")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.A{1, 2}, 3}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{1, 2}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.D{{Key: "0", Value: bson.A{1, 2}}}}},
	)
	cases := []struct {
		filter bson.D
		want   []int32
	}{
		{bson.D{{Key: "a.0", Value: 1}}, []int32{2, 3}},
		{bson.D{{Key: "a.0", Value: bson.A{1, 2}}}, []int32{1, 3}},
		{bson.D{{Key: "a.0", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lte", Value: 2}}}}, []int32{2, 3}},
		{bson.D{{Key: "a.0", Value: bson.D{{Key: "$in", Value: bson.A{2, 3}}}}}, []int32{3}},
		{bson.D{{Key: "a.0", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$eq", Value: 1}}}}}}, []int32{1, 3}},
		{bson.D{{Key: "a.0.0", Value: 1}}, []int32{1, 3}},
	}
	check := func(hint string) {
		t.Helper()
		for _, c := range cases {
			got := findIDsHinted(t, coll, c.filter, bson.D{{Key: "_id", Value: 1}}, hint)
			if !slices.Equal(got, c.want) {
				t.Errorf("hint %q: find %v: got %v, want %v", hint, c.filter, got, c.want)
			}
		}
	}
	check("")
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a.0", Value: 1}}}, {Key: "name", Value: "a.0_1"}})
	check("a.0_1")
	ex := explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "a.0", Value: 1}}}})
	if st := stageOf(ex.Lookup("queryPlanner", "winningPlan").Document()); st != "IXSCAN" {
		t.Errorf("{a.0: 1} runs as %s, want IXSCAN on a.0_1", st)
	}
}

// TestNumericPathAmbiguousIndex: MongoDB refuses (code 16746) to index a.0
// in a document where 0 names both an element of a and a field of a
// document in a, on insert and when building the index. Lethe used to take
// only the element, so a query through the index missed what a collection
// scan finds.
func TestNumericPathAmbiguousIndex(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	coll := ts.Client.Database("paths").Collection("ambiguous")
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a.0", Value: 1}}}, {Key: "name", Value: "a.0_1"}})
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.D{{Key: "0", Value: 1}}}}})
	wantCode(t, err, 16746)
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{5, bson.D{{Key: "0", Value: 1}}}}})
	wantCode(t, err, 16746)
	// Without an element at that position the number is only a field name.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.A{}}}, bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: bson.A{bson.D{{Key: "1", Value: 1}}}}})
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "0", Value: 1}}}}}}})
	wantCode(t, err, 16746)
	wantIDs(t, coll, bson.D{{Key: "a.0", Value: bson.D{{Key: "$exists", Value: true}}}}, 4)

	plain := ts.Client.Database("paths").Collection("ambiguous_plain")
	mustInsert(t, plain, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.D{{Key: "0", Value: 1}}}}})
	wantIDs(t, plain, bson.D{{Key: "a.0", Value: 1}}, 1)
	_, err = plain.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a.0", Value: 1}}})
	wantCode(t, err, 16746)
	wantIDs(t, plain, bson.D{{Key: "a.0", Value: 1}}, 1)
}

// TestNumericPathSort: documents sort by the keys an index on the sort path
// would hold; a numeric component that names no element of an array is a
// field name in its documents.
func TestNumericPathSort(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("paths").Collection("sort")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.D{{Key: "1", Value: 3}}}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{0, 1}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 2}},
		bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: bson.A{0, bson.A{2, 9}}}},
	)
	for _, hint := range []string{"", "a.1_1"} {
		if hint != "" {
			createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a.1", Value: 1}}}, {Key: "name", Value: "a.1_1"}})
		}
		if got, want := findIDsHinted(t, coll, bson.D{}, bson.D{{Key: "a.1", Value: 1}}, hint), []int32{3, 2, 1, 4}; !slices.Equal(got, want) {
			t.Errorf("hint %q: sort by a.1: got %v, want %v", hint, got, want)
		}
		if got, want := findIDsHinted(t, coll, bson.D{}, bson.D{{Key: "a.1", Value: -1}}, hint), []int32{4, 1, 2, 3}; !slices.Equal(got, want) {
			t.Errorf("hint %q: sort by a.1 descending: got %v, want %v", hint, got, want)
		}
	}
}

// TestNumericPathDistinct: distinct extracts values its own way
// (extractAllElementsAlongPath): a numeric component after an array only
// selects by position, and an array it selects at the end of the path is
// expanded.
func TestNumericPathDistinct(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("paths").Collection("distinct")
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.A{1, 2}, 3}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{bson.D{{Key: "1", Value: bson.D{{Key: "b", Value: 5}}}}}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 6}}, bson.D{{Key: "b", Value: 7}}}}},
	)
	cases := []struct {
		key  string
		want string
	}{
		{"a.0", `{"v": [1, 2, {"1": {"b": 5}}, {"b": 6}]}`},
		{"a.1.b", `{"v": [7]}`},
		{"a.b", `{"v": [6, 7]}`},
		{"a.01", `{"v": []}`},
	}
	for _, c := range cases {
		reply := run(t, coll.Database(), bson.D{{Key: "distinct", Value: coll.Name()}, {Key: "key", Value: c.key}})
		var want bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(c.want), false, &want); err != nil {
			t.Fatal(err)
		}
		// MongoDB lists the values in the order it meets them; compare sets.
		got, wantVals := valueStrings(t, reply.Lookup("values").Array()), valueStrings(t, want.Lookup("v").Array())
		if !slices.Equal(got, wantVals) {
			t.Errorf("distinct %s: got %v, want %v", c.key, got, wantVals)
		}
	}
}

func valueStrings(t *testing.T, arr bson.RawArray) []string {
	t.Helper()
	vals, err := arr.Values()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = v.String()
	}
	slices.Sort(out)
	return out
}

// TestCompoundMultikeyBounds: an index on a.b and a.c holds one key per
// element of a, pairing b and c of the same element, as MongoDB's does; a
// query whose conditions hold in different elements must still find the
// document, so the planner may not combine bounds on the two fields.
// Fields without a common prefix cannot share an array and keep combined
// bounds.
func TestCompoundMultikeyBounds(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("paths").Collection("compound")
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "a.b", Value: 1}, {Key: "a.c", Value: 1}}}, {Key: "name", Value: "ab_ac"}})
	createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}, {Key: "tags", Value: 1}}}, {Key: "name", Value: "u_tags"}})
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}, {Key: "c", Value: 2}}, bson.D{{Key: "b", Value: 3}, {Key: "c", Value: 4}}}}, {Key: "u", Value: 7}, {Key: "tags", Value: bson.A{"x", "y"}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}, {Key: "c", Value: 4}}}}, {Key: "u", Value: 8}, {Key: "tags", Value: bson.A{"y"}}},
	)
	cases := []struct {
		filter bson.D
		hint   string
		want   []int32
	}{
		{bson.D{{Key: "a.b", Value: 1}, {Key: "a.c", Value: 4}}, "ab_ac", []int32{1, 2}},
		{bson.D{{Key: "a.b", Value: 1}, {Key: "a.c", Value: bson.D{{Key: "$gt", Value: 3}}}}, "ab_ac", []int32{1, 2}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "b", Value: 1}, {Key: "c", Value: 4}}}}}}, "ab_ac", []int32{2}},
		{bson.D{{Key: "u", Value: 7}, {Key: "tags", Value: "y"}}, "u_tags", []int32{1}},
	}
	for _, c := range cases {
		for _, hint := range []string{"", c.hint} {
			if got := findIDsHinted(t, coll, c.filter, bson.D{{Key: "_id", Value: 1}}, hint); !slices.Equal(got, c.want) {
				t.Errorf("hint %q: find %v: got %v, want %v", hint, c.filter, got, c.want)
			}
		}
	}
	// The bounds on u and tags still combine: one key examined.
	ex := explainOf(t, coll, bson.D{{Key: "filter", Value: bson.D{{Key: "u", Value: 7}, {Key: "tags", Value: "y"}}}, {Key: "hint", Value: "u_tags"}})
	if n := ex.Lookup("executionStats", "totalKeysExamined").AsInt64(); n != 1 {
		t.Errorf("u_tags examined %d keys for {u: 7, tags: y}, want 1", n)
	}
}
