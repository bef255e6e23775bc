package engine

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/ttlindex"
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
	clock := ttlindex.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
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
