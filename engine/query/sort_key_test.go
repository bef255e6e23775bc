package query

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
)

// AppendKey orders documents as Compare does, with and without a
// collation, ascending and descending, over strings, arrays of strings,
// numbers and missing fields.
func TestSortAppendKeyAgreesWithCompare(t *testing.T) {
	coll, err := collation.Parse(mustDoc(bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	words := []any{"a", "A", "b", "é", "E", "ab", "Ab", 3, 2.5, nil, bson.A{"B", "a"}, bson.A{}, bson.D{{Key: "x", Value: "Y"}}}
	r := rand.New(rand.NewPCG(1, 2))
	var docs []bson.Raw
	for i := 0; i < 60; i++ {
		d := bson.D{{Key: "_id", Value: i}}
		if r.IntN(6) > 0 {
			d = append(d, bson.E{Key: "a", Value: words[r.IntN(len(words))]})
		}
		d = append(d, bson.E{Key: "b", Value: words[r.IntN(len(words))]})
		docs = append(docs, mustDoc(d))
	}
	for _, c := range []*collation.Collator{nil, coll} {
		for _, spec := range []bson.D{{{Key: "a", Value: 1}}, {{Key: "a", Value: -1}, {Key: "b", Value: 1}}} {
			s, err := CompileSortWith(mustDoc(spec), c)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range docs {
				for _, y := range docs {
					want := s.Compare(x, y)
					got := bytes.Compare(s.AppendKey(nil, x), s.AppendKey(nil, y))
					if sign(got) != sign(want) {
						t.Fatalf("%v %v: %s vs %s: key order %d, Compare %d", c.Spec(), spec, x, y, got, want)
					}
				}
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

func mustDoc(d bson.D) bson.Raw {
	b, err := bson.Marshal(d)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return b
}
