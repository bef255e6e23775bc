package pipeline_test

// These tests of the spilling $setWindowFields of package window stay with
// the other spilling tests, whose watched run and checks they share
// (export_test.go): a test of package pipeline cannot import window,
// which imports pipeline, but one of package pipeline_test can.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
	_ "github.com/lethedb/lethe/engine/pipeline/window"
	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// windowSpec numbers the documents of each partition of k in order of v,
// sums v over the partition so far and names the _id before.
const windowSpec = `{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"v": 1}, "output": {
	"rank": {"$documentNumber": {}},
	"running": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
	"prev": {"$shift": {"output": "$_id", "by": -1, "default": null}}}}}`

func TestSpillingWindowHoldsOnePartition(t *testing.T) {
	// 24 MB of documents in 600 partitions of 40 KB through
	// $setWindowFields with a blocking-stage limit of 1 MiB and a memory
	// limit of 4 MiB: the sort on the partition key and sortBy spills,
	// the partitions are made one at a time from what it reads back, and
	// the pipeline ends with the exact result, holding a few MiB at most.
	const (
		n, groups  = 24_001, 600
		sortLimit  = 1 << 20
		memLimit   = 4 << 20
		dataBytes  = n * 1000
		heapBudget = 12 << 20 // the limits, merge buffers, the output and slack
	)
	stages := pipeline.StagesOf(t, windowSpec, `{"$project": {"pad": 0}}`)
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	p, err := pipeline.Compile(stages, pipeline.Options{AllowDiskUse: true, Scratch: sc, SortLimit: sortLimit, MemLimit: memLimit})
	if err != nil {
		t.Fatal(err)
	}

	docs, base, peak := pipeline.RunWatched(t, p, n, groups)

	// The expected output, by brute force: the _ids of each partition in
	// order of v, the partitions in order of k.
	parts := make([][]int, groups)
	for i := range n {
		parts[i%groups] = append(parts[i%groups], i)
	}
	var want []string
	for k, ids := range parts {
		slices.SortFunc(ids, func(a, b int) int { return pipeline.Permuted(a, n) - pipeline.Permuted(b, n) })
		running := 0
		for j, id := range ids {
			running += pipeline.Permuted(id, n)
			prev := "null"
			if j > 0 {
				prev = fmt.Sprintf(`{"$numberInt":"%d"}`, ids[j-1])
			}
			want = append(want, fmt.Sprintf(`{"_id": {"$numberInt":"%d"},"k": {"$numberInt":"%d"},"v": {"$numberInt":"%d"},"rank": {"$numberInt":"%d"},"running": {"$numberInt":"%d"},"prev": %s}`,
				id, k, pipeline.Permuted(id, n), j+1, running, prev))
		}
	}
	if len(docs) != n {
		t.Fatalf("%d documents, want %d", len(docs), n)
	}
	for i, d := range docs {
		if got := d.String(); got != want[i] {
			t.Fatalf("output %d: %s, want %s", i, got, want[i])
		}
	}

	pipeline.CheckSpilledRun(t, sc, dir, base, peak, dataBytes/2, heapBudget)
}

func TestWindowWithoutDiskUse(t *testing.T) {
	// Without allowDiskUse, 4 MB past a limit of 1 MiB fails as before:
	// with partitionBy, with the 292 of the sort MongoDB puts before the
	// stage; without partitionBy or sortBy, with the stage's own 5414201.
	// Nothing is written.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	for _, tt := range []struct {
		stage string
		code  mongoerr.Code
	}{
		{windowSpec, mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed},
		{`{"$setWindowFields": {"output": {"n": {"$count": {}}}}}`, 5414201},
	} {
		p, err := pipeline.Compile(pipeline.StagesOf(t, tt.stage), pipeline.Options{Scratch: sc, SortLimit: 1 << 20, MemLimit: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Run(context.Background(), pipeline.Generated(4001, 40, nil))
		if mongoerr.CodeOf(err) != tt.code {
			t.Errorf("%s over 4 MB with a limit of 1 MiB: %v, want code %d", tt.stage, err, tt.code)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("without allowDiskUse, the scratch directory was made: %v", err)
	}
}

func TestSpillingWindowRefusesAPartitionPastTheLimit(t *testing.T) {
	// A partition is held whole: two partitions of 4 MB each, with a
	// request limit of 2 MiB, fail with MongoDB's error of a window past
	// its memory, and the runs of the sort are gone once it fails.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	p, err := pipeline.Compile(pipeline.StagesOf(t, windowSpec), pipeline.Options{AllowDiskUse: true, Scratch: sc, SortLimit: 256 << 10, MemLimit: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background(), pipeline.Generated(8001, 2, nil))
	if mongoerr.CodeOf(err) != 5414201 {
		t.Errorf("a partition of 4 MB with a limit of 2 MiB: %v, want code 5414201", err)
	}
	if _, peak := sc.Used(); peak == 0 {
		t.Error("the sort of the window did not spill")
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after the failure, the scratch directory holds %v (%v)", ents, err)
	}
}

func TestSpillingWindowRefusesAnArrayPartition(t *testing.T) {
	// The partition key is checked as the documents come in, as in memory.
	sc := spill.New(spill.Config{Dir: filepath.Join(t.TempDir(), "_tmp", "1")})
	defer sc.Close()
	p, err := pipeline.Compile(pipeline.StagesOf(t, `{"$setWindowFields": {"partitionBy": {"$cond": [{"$eq": ["$_id", 7]}, ["$k"], "$k"]}, "output": {"n": {"$count": {}}}}}`),
		pipeline.Options{AllowDiskUse: true, Scratch: sc})
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]bson.Raw, 10)
	for i := range docs {
		docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i % 2)}})
	}
	if _, err := p.Run(context.Background(), pipeline.Slice(docs)); mongoerr.CodeOf(err) != mongoerr.TypeMismatch {
		t.Errorf("a partition key that is an array: %v, want TypeMismatch", err)
	}
}

func TestSpillingWindowStopsWithContext(t *testing.T) {
	// The request ends while the window reads its sorted runs back: the
	// stage stops, and the runs it was reading are gone.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	p, err := pipeline.Compile(pipeline.StagesOf(t, windowSpec), pipeline.Options{AllowDiskUse: true, Scratch: sc, SortLimit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	// Adding 2000 documents to the sort asks 7 times; reading them back
	// and computing the windows, as many again.
	ctx := &endingContext{Context: context.Background(), n: 12}
	if _, err := p.Run(ctx, pipeline.Generated(2000, 20, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if _, peak := sc.Used(); peak == 0 {
		t.Error("the sort of the window did not spill before the end")
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after the end, the scratch directory holds %v (%v)", ents, err)
	}
}

// endingContext ends after its Err has been asked n times, so that it
// ends while a stage is at work rather than before it starts; package
// window's tests have the same.
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
