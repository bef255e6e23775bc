package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/mongoerr"
)

// TestWindowConformanceSpilled runs the $setWindowFields conformance cases
// again with allowDiskUse and a blocking-stage limit of a few documents, so
// that the sort of every partitioned window spills, and their partitions are
// made from runs merged back from disk: the results must not change.
func TestWindowConformanceSpilled(t *testing.T) {
	files, err := filepath.Glob("../testdata/aggregation/stage_setwindowfields*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("$setWindowFields conformance files: %v", files)
	}
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(t.TempDir(), Options{Clock: clock, NoReaper: true, SortMemoryLimit: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	allow, err := bson.Marshal(bson.D{{Key: "allowDiskUse", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	for fi, file := range files {
		sf := readStageFile(t, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			for ci, c := range sf.Cases {
				if c.Options != nil {
					t.Fatalf("case %q has options, which this test would replace", c.Name)
				}
				c.Options = allow
				db := fmt.Sprintf("win%d_%d", fi, ci)
				t.Run(c.Name, func(t *testing.T) { runStageCase(t, e, db, &sf, c) })
			}
		})
	}
}

func TestAggregateWindowSpillsAndRemovesItsFiles(t *testing.T) {
	// 3000 documents of 1 KB in 100 partitions with a sort limit of 64
	// KiB and a request limit of 256 KiB: the window's sort spills, each
	// partition of 30 KB is made alone, and the request's files go when it
	// ends, whether it succeeds or fails.
	const n, parts = 3000, 100
	e := limitedEngine(t, n, 1000, 64<<10, 256<<10)
	ctx := context.Background()
	pipe := func(last ...string) []bson.Raw {
		return stagesOf(t, append([]string{
			`{"$setWindowFields": {"partitionBy": {"$mod": ["$_id", 100]}, "sortBy": {"_id": -1}, "output": {"rank": {"$rank": {}}}}}`,
			`{"$project": {"big": 0}}`,
		}, last...)...)
	}
	docs, err := e.Aggregate(ctx, "db", "c", pipe(), AggregateOptions{AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != n {
		t.Fatalf("%d documents, want %d", len(docs), n)
	}
	// Partitions in order of _id % 100, each in descending order of _id.
	for i, d := range docs {
		p, j := i/(n/parts), i%(n/parts)
		id, rank := d.Lookup("_id").AsInt64(), d.Lookup("rank").AsInt64()
		if wantID := int64(p + parts*(n/parts-1-j)); id != wantID || rank != int64(j+1) {
			t.Fatalf("output %d: %s, want _id %d and rank %d", i, d, wantID, j+1)
		}
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
	// A stage after the window fails.
	_, err = e.Aggregate(ctx, "db", "c", pipe(`{"$project": {"x": {"$add": ["$_id", "a"]}}}`), AggregateOptions{AllowDiskUse: true})
	if mongoerr.CodeOf(err) != mongoerr.TypeMismatch {
		t.Errorf("$add of a string: %v, want TypeMismatch", err)
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left after a failure: %v", files)
	}
	// Without allowDiskUse, the sort before the window fails with 292,
	// within a request limit that holds the input.
	e = limitedEngine(t, n, 1000, 64<<10, 8<<20)
	_, err = e.Aggregate(ctx, "db", "c", pipe(), AggregateOptions{})
	if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("without allowDiskUse: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
}
