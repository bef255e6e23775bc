package window

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/pipeline/accum"
	"github.com/lethedb/lethe/mongoerr"
)

// windowDocs makes n documents {_id: i, g: i%3, x: i}.
func windowDocs(n int) []bson.Raw {
	docs := make([]bson.Raw, n)
	for i := range docs {
		docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "g", Value: int32(i % 3)}, {Key: "x", Value: int32(i)}})
	}
	return docs
}

func runWindow(t *testing.T, ctx context.Context, opts pipeline.Options, spec bson.D, docs []bson.Raw) ([]bson.Raw, error) {
	t.Helper()
	stage, err := bson.Marshal(bson.D{{Key: "$setWindowFields", Value: spec}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Compile([]bson.Raw{stage}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p.Run(ctx, pipeline.Slice(docs))
}

func TestWindowMemoryLimits(t *testing.T) {
	docs := windowDocs(100)
	running := bson.D{{Key: "s", Value: bson.D{{Key: "$push", Value: "$x"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}}}
	tests := []struct {
		name string
		spec bson.D
		opts pipeline.Options
		code mongoerr.Code
	}{
		// The input alone is over the limit: the $sort MongoDB puts
		// before the stage refuses it.
		{"sorted input", bson.D{{Key: "sortBy", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "output", Value: running}},
			pipeline.Options{SortLimit: 1000}, mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed},
		// Without partitionBy or sortBy there is no sort: the stage's own
		// limit holds.
		{"unsorted input", bson.D{{Key: "output", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$push", Value: "$x"}}}}}},
			pipeline.Options{SortLimit: 1000}, 5414201},
		// With allowDiskUse the request's own bound holds, which Lethe
		// never lifts.
		{"allowDiskUse", bson.D{{Key: "sortBy", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "output", Value: running}},
			pipeline.Options{AllowDiskUse: true, MemLimit: 1000}, mongoerr.ExceededMemoryLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runWindow(t, context.Background(), tt.opts, tt.spec, docs)
			if mongoerr.CodeOf(err) != tt.code {
				t.Fatalf("got %v, want code %d", err, tt.code)
			}
		})
	}
}

// What the window functions hold counts too: the input fits, the arrays
// of a running $push over it do not.
func TestWindowAccumulatorMemory(t *testing.T) {
	docs := windowDocs(300)
	spec := bson.D{{Key: "output", Value: bson.D{{Key: "s", Value: bson.D{{Key: "$push", Value: "$$ROOT"}}}}}}
	limit := int64(pipeline.SizeOf(docs)) + 1000
	if _, err := runWindow(t, context.Background(), pipeline.Options{SortLimit: limit}, spec, docs); mongoerr.CodeOf(err) != 5414201 {
		t.Fatalf("got %v, want code 5414201", err)
	}
	// The same, partitioned, holds a third at a time and fits.
	spec = bson.D{{Key: "partitionBy", Value: "$g"}, {Key: "output", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}}}}}
	out, err := runWindow(t, context.Background(), pipeline.Options{SortLimit: limit}, spec, docs)
	if err != nil {
		t.Fatal(err)
	}
	if n := out[0].Lookup("n").Int32(); n != 100 {
		t.Errorf("partition of %d documents, want 100", n)
	}
}

// endingContext ends after its Err has been asked n times, so that it
// ends while a stage is at work rather than before it starts.
type endingContext struct {
	context.Context
	n int
}

func (c *endingContext) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func TestWindowStopsWithContext(t *testing.T) {
	ctx := &endingContext{Context: context.Background(), n: 20}
	spec := bson.D{{Key: "sortBy", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "output", Value: bson.D{
		{Key: "s", Value: bson.D{{Key: "$sum", Value: "$x"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{-500, 500}}}}}}}}}
	_, err := runWindow(t, ctx, pipeline.Options{}, spec, windowDocs(2000))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// Running $push arrays add up to the square of the partition: the limit
// stops them while they are made, not after.
func TestWindowResultsCount(t *testing.T) {
	docs := windowDocs(2000)
	spec := bson.D{{Key: "sortBy", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "output", Value: bson.D{
		{Key: "s", Value: bson.D{{Key: "$push", Value: "$x"}, {Key: "window", Value: bson.D{{Key: "documents", Value: bson.A{"unbounded", "current"}}}}}}}}}
	limit := int64(pipeline.SizeOf(docs)) * 4
	_, err := runWindow(t, context.Background(), pipeline.Options{SortLimit: limit}, spec, docs)
	if mongoerr.CodeOf(err) != 5414201 {
		t.Fatalf("got %v, want code 5414201", err)
	}
}

// Every window function that runs an accumulator finds one, in $group's
// table or among those only windows have.
func TestAccumulatorWindowsHaveAccumulators(t *testing.T) {
	for _, op := range accumulatorWindows {
		if !accum.HasWindow(op) {
			t.Errorf("no accumulator for the window function %s", op)
		}
	}
}
