package engine

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/query"
)

func TestTopKIsAStableSortsPrefix(t *testing.T) {
	// With many ties, the first k are those a stable sort of everything
	// puts first.
	srt, err := query.CompileSort(mustMarshal(t, bson.D{{Key: "a", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var docs []storedDoc
	for i := range 500 {
		docs = append(docs, storedDoc{doc: mustMarshal(t, bson.D{{Key: "a", Value: rng.IntN(7)}, {Key: "i", Value: i}})})
	}
	all := slices.Clone(docs)
	slices.SortStableFunc(all, func(a, b storedDoc) int { return srt.Compare(a.doc, b.doc) })
	for _, k := range []int64{1, 7, 64, 499, 500, 900} {
		top := newTopK(k, srt.Compare)
		for i := range docs {
			top.offer(&docs[i])
		}
		got := top.sorted()
		want := all[:min(int(k), len(all))]
		if !slices.EqualFunc(got, want, func(a, b storedDoc) bool { return bytes.Equal(a.doc, b.doc) }) {
			t.Fatalf("k=%d: the first differ from a stable sort's", k)
		}
	}
}
