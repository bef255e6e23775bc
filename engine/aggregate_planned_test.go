package engine

import (
	"testing"
)

// TestPlannedStages checks which leading stages become the query: only
// where a find's order (filter, sort, skip, limit, projection) keeps their
// meaning.
func TestPlannedStages(t *testing.T) {
	for _, c := range []struct {
		stages      []string
		n           int
		skip, limit int64
		sort, proj  bool
	}{
		{[]string{`{"$match": {"a": 1}}`, `{"$match": {"b": 1}}`}, 2, 0, 0, false, false},
		{[]string{`{"$sort": {"a": 1}}`, `{"$skip": 2}`, `{"$limit": 3}`}, 3, 2, 3, true, false},
		// $limit then $skip: three documents from the third, not five.
		{[]string{`{"$limit": 5}`, `{"$skip": 2}`}, 2, 2, 3, false, false},
		{[]string{`{"$limit": 5}`, `{"$limit": 3}`}, 2, 0, 3, false, false},
		// A skip past the limit leaves nothing; the pipeline says so.
		{[]string{`{"$limit": 2}`, `{"$skip": 2}`}, 1, 0, 2, false, false},
		// A $match after a $limit filters the limited documents.
		{[]string{`{"$limit": 2}`, `{"$match": {"a": 1}}`}, 1, 0, 2, false, false},
		{[]string{`{"$sort": {"a": 1}}`, `{"$match": {"a": 1}}`}, 1, 0, 0, true, false},
		{[]string{`{"$match": {"a": 1}}`, `{"$project": {"a": 1}}`, `{"$limit": 1}`}, 2, 0, 0, false, true},
		// A computed field stays in the pipeline.
		{[]string{`{"$project": {"a": {"$add": [1, 2]}}}`}, 0, 0, 0, false, false},
		{[]string{`{"$group": {"_id": null}}`, `{"$match": {}}`}, 0, 0, 0, false, false},
	} {
		spec, n := planned(stagesOf(t, c.stages...))
		if n != c.n || spec.Skip != c.skip || spec.Limit != c.limit || (spec.Sort != nil) != c.sort || (spec.Projection != nil) != c.proj {
			t.Errorf("%v: %d stages planned, skip %d, limit %d, sort %v, projection %v; want %d, %d, %d, %v, %v",
				c.stages, n, spec.Skip, spec.Limit, spec.Sort != nil, spec.Projection != nil, c.n, c.skip, c.limit, c.sort, c.proj)
		}
	}
}
