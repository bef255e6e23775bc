package engine

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// TestTextUnderOr: MongoDB answers $text under an $or when every other
// clause can use an index (src/mongo/db/query/query_planner.cpp, the OR
// stage over the text search and the clauses' index scans;
// jstests/core/fts_projection.js, SERVER-12173 and SERVER-12592), and
// otherwise fails with NoQueryExecutionPlans (291): naming TEXT under OR
// when $text is a clause of the root $or, "No query solutions" elsewhere.
// An index the planner may not use for a clause, hidden or of another
// collation for its strings, leaves the clause unindexed.
func TestTextUnderOr(t *testing.T) {
	e := openTestEngine(t)
	loadText(t, e, "articles", manualDocs(t, "articles.jsonl"), `{"key": {"subject": "text"}}`)
	for _, spec := range []string{
		`{"key": {"author": 1}}`,
		`{"key": {"views": 1}, "hidden": true}`,
		`{"key": {"subject": 1}, "collation": {"locale": "en", "strength": 2}}`,
	} {
		if err := createIndex(t, e, "articles", spec); err != nil {
			t.Fatal(spec, err)
		}
	}
	ctx := context.Background()
	ci := WithCollation(ctx, mustRaw(t, enStrength2))
	for _, c := range []struct {
		name   string
		ctx    context.Context
		filter string
		want   []int32
		code   mongoerr.Code
		msg    string
	}{
		{name: "an indexed clause", ctx: ctx, filter: `{"$or": [{"$text": {"$search": "coffee"}}, {"author": "abc"}]}`, want: []int32{1, 2, 3, 5, 7}},
		{name: "clauses of a nested $or", ctx: ctx, filter: `{"$or": [{"$or": [{"author": "jkl"}, {"$text": {"$search": "cake"}}]}, {"_id": {"$lt": 2}}]}`, want: []int32{1, 3, 6}},
		{name: "$text with a condition of its clause", ctx: ctx, filter: `{"$or": [{"$text": {"$search": "coffee"}, "views": {"$gt": 20}}, {"author": "jkl"}]}`, want: []int32{1, 6}},
		{name: "a hidden index", ctx: ctx, filter: `{"$or": [{"$text": {"$search": "coffee"}}, {"views": 90}]}`, code: 291, msg: "TEXT under OR"},
		{name: "an index of another collation", ctx: ctx, filter: `{"$or": [{"$text": {"$search": "coffee"}}, {"subject": "BAKING"}]}`, code: 291, msg: "TEXT under OR"},
		{name: "an index of the query's collation", ctx: ci, filter: `{"$or": [{"$text": {"$search": "coffee"}}, {"subject": "BAKING"}]}`, want: []int32{1, 2, 4, 7}},
		{name: "an unindexed clause", ctx: ctx, filter: `{"$or": [{"$text": {"$search": "coffee"}}, {"editor": "xyz"}]}`, code: 291, msg: "TEXT under OR"},
		{name: "an unindexed clause, the $or not the root", ctx: ctx, filter: `{"views": {"$lt": 20}, "$or": [{"editor": "xyz"}, {"$text": {"$search": "coffee"}}]}`, code: 291, msg: "No query solutions"},
	} {
		cur, err := e.Find(c.ctx, "db", "articles", FindSpec{Filter: extDoc(t, c.filter)})
		var got []bson.Raw
		if err == nil {
			got, err = cur.All(c.ctx)
		}
		if c.code != 0 {
			if mongoerr.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: got %v, want code %d saying %q", c.name, err, c.code, c.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if g := sortedIDs(got); !equalIDs(g, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, g, c.want)
		}
	}
	// The union is one plan over the text index and author_1.
	ex, err := e.Explain(ctx, "db", "articles", FindSpec{Filter: extDoc(t, `{"$or": [{"$text": {"$search": "coffee"}}, {"author": "abc"}]}`)}, true)
	if err != nil || ex.Stage != "OR" || ex.NReturned != 5 {
		t.Errorf("explain: %+v %v, want an OR returning 5", ex, err)
	}
}

func sortedIDs(docs []bson.Raw) []int32 {
	out := ids(docs)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
