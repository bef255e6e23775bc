package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// docs makes n documents {_id: i, pad: <size bytes>}.
func docs(n, size int) []bson.Raw {
	pad := strings.Repeat("x", size)
	out := make([]bson.Raw, n)
	for i := range out {
		out[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}})
	}
	return out
}

func stagesOf(t *testing.T, stages ...string) []bson.Raw {
	t.Helper()
	var out []bson.Raw
	for _, s := range stages {
		var d bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out = append(out, d)
	}
	return out
}

func TestSampleFirstHoldsOnlyTheSample(t *testing.T) {
	// 100 documents of 1 KiB against a limit of 8 KiB for blocking
	// stages: a $sort of them fails, a $sample of three reads them all
	// and holds three.
	opts := Options{SortLimit: 8 << 10}
	ctx := context.Background()
	p, err := Compile(stagesOf(t, `{"$sample": {"size": 3}}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(ctx, Slice(docs(100, 1<<10)))
	if err != nil || len(out) != 3 {
		t.Fatalf("$sample of 3: %d documents, %v", len(out), err)
	}
	p, err = Compile(stagesOf(t, `{"$sort": {"_id": -1}}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, Slice(docs(100, 1<<10))); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Fatalf("$sort of 100 KiB under a limit of 8 KiB: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
}

func TestPipelineStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, st := range []string{
		`{"$group": {"_id": "$_id"}}`,
		`{"$unwind": "$pad"}`,
		`{"$bucketAuto": {"groupBy": "$_id", "buckets": 2}}`,
		`{"$sample": {"size": 2}}`,
	} {
		p, err := Compile(stagesOf(t, st), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx, Slice(docs(1000, 1))); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: %v, want context.Canceled", st, err)
		}
	}
}

func TestCompileChecksEveryStage(t *testing.T) {
	// MongoDB parses the whole pipeline before running it: an error in the
	// last stage fails even when no document would reach it.
	_, err := Compile(stagesOf(t, `{"$match": {"a": 1}}`, `{"$limit": 0}`), Options{})
	if mongoerr.CodeOf(err) != 15958 {
		t.Errorf("$limit: 0 after $match: %v, want 15958", err)
	}
}

func TestFacetOutputBounded(t *testing.T) {
	// Two facets of 60 MiB each pass the 100 MiB a $facet may build.
	opts := Options{SortLimit: 1 << 30, MemLimit: 1 << 30}
	p, err := Compile(stagesOf(t, `{"$facet": {"a": [], "b": []}}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), Slice(docs(60, 1<<20))); mongoerr.CodeOf(err) != 4031700 {
		t.Errorf("$facet of 120 MiB: %v, want 4031700", err)
	}
}

// The accumulators bound the documents they make ($mergeObjects) by
// values.MaxDocBytes, as they cannot import this package: it must be this
// package's bound.
func TestAccumulatorsShareMaxDocBytes(t *testing.T) {
	if values.MaxDocBytes != MaxDocBytes {
		t.Errorf("values.MaxDocBytes is %d, MaxDocBytes %d", values.MaxDocBytes, MaxDocBytes)
	}
}
