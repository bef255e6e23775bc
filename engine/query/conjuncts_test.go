package query

import (
	"strings"
	"testing"
)

func TestConjuncts(t *testing.T) {
	tests := []struct {
		filter string
		want   string
	}{
		{`{}`, ``},
		{`{"a": 5}`, `a $eq 5`},
		{`{"a": null}`, `a $eq null`},
		{`{"a": [1, 2]}`, `a $eq [1,2]`},
		{`{"a": {"$gt": 1, "$lte": 9}}`, `a $gt 1; a $lte 9`},
		{`{"a": {"$gte": 1, "$lt": 9}, "b.c": "x"}`, `a $gte 1; a $lt 9; b.c $eq "x"`},
		{`{"a": {"$eq": 3}}`, `a $eq 3`},
		{`{"a": {"$in": [3, 1, "x", 2]}}`, `a $in 1,2,3,"x"`},
		{`{"a": {"$in": []}}`, `a $in `},
		{`{"$and": [{"a": 1}, {"$and": [{"b": {"$lt": 2}}]}]}`, `a $eq 1; b $lt 2`},
		{`{"a": 1, "$comment": "c"}`, `a $eq 1`},
		// Not usable for index bounds.
		{`{"a": {"$regex": "^x"}}`, ``},
		{`{"a": {"$eq": {"$regularExpression": {"pattern": "x", "options": ""}}}}`, ``},
		{`{"a": {"$in": [1, {"$regularExpression": {"pattern": "x", "options": ""}}]}}`, ``},
		{`{"a": {"$ne": 1}}`, ``},
		{`{"a": {"$nin": [1]}}`, ``},
		{`{"a": {"$not": {"$gt": 1}}}`, ``},
		{`{"$or": [{"a": 1}, {"b": 1}]}`, ``},
		{`{"$nor": [{"a": 1}]}`, ``},
		{`{"a": {"$exists": true}}`, ``},
		{`{"a": {"$elemMatch": {"$gt": 1}}}`, ``},
		{`{"a": {"$all": [1]}}`, ``},
		{`{"$expr": {"$eq": ["$a", 1]}}`, ``},
		{`{"a": {"$size": 1}, "b": 2}`, `b $eq 2`},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range mustCompile(t, tt.filter).Conjuncts() {
			var vals []string
			for _, v := range p.Values {
				vals = append(vals, relaxed(v.String()))
			}
			got = append(got, p.Path+" "+p.Op+" "+strings.Join(vals, ","))
		}
		if s := strings.Join(got, "; "); s != tt.want {
			t.Errorf("Conjuncts(%s) = %q, want %q", tt.filter, s, tt.want)
		}
	}
}

// relaxed shortens the canonical extended JSON of small test values.
func relaxed(s string) string {
	r := strings.NewReplacer(`{"$numberInt":"`, ``, `"}`, ``)
	return r.Replace(s)
}
