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

func TestSpilledStagesKeepTheirConformance(t *testing.T) {
	// The conformance cases of $bucketAuto and $facet again, with
	// allowDiskUse and a blocking-stage limit of 64 bytes: every sort of
	// $bucketAuto and every input of a $facet goes to disk, and the
	// results are those of memory.
	e, err := Open(t.TempDir(), Options{Clock: clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), NoReaper: true, SortMemoryLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for fi, name := range []string{"stage_bucketauto.json", "stage_facet.json"} {
		sf := readStageFile(t, filepath.Join("../testdata/aggregation", name))
		t.Run(name, func(t *testing.T) {
			for ci, c := range sf.Cases {
				if _, err := c.Options.LookupErr("allowDiskUse"); err == nil {
					continue // a case of its own limit
				}
				opts := bson.D{{Key: "allowDiskUse", Value: true}}
				if let, err := c.Options.LookupErr("let"); err == nil {
					opts = append(opts, bson.E{Key: "let", Value: let})
				}
				c.Options, _ = bson.Marshal(opts)
				db := fmt.Sprintf("spilled%d_%d", fi, ci)
				t.Run(c.Name, func(t *testing.T) { runStageCase(t, e, db, &sf, c) })
				if files := scratchFiles(t, e); len(files) != 0 {
					t.Fatalf("%s: temporary files left: %v", c.Name, files)
				}
			}
		})
	}
}

func TestAggregateBucketAutoAndFacetSpill(t *testing.T) {
	// 3000 documents of 1 KB with a sort limit of 64 KiB: $bucketAuto and
	// $facet over the collection spill, give the exact result, and leave
	// no file; without allowDiskUse they fail with 292. (Without it, the
	// $facet holds its input within the request's limit of 8 MiB, as
	// MongoDB's holds none of it, and its $bucketAuto fails.)
	const n = 3000
	e := limitedEngine(t, n, 1000, 64<<10, 8<<20)
	ctx := context.Background()
	bucketAuto := `{"$bucketAuto": {"groupBy": {"$mod": ["$_id", 1000]}, "buckets": 4, "output": {"n": {"$sum": 1}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"}}}}`
	facet := `{"$facet": {"n": [{"$count": "n"}], "top": [{"$sort": {"_id": -1}}, {"$limit": 2}, {"$project": {"_id": 1}}], "b": [` + bucketAuto + `]}}`
	// _id % 1000 has 3 documents each, _id in order: buckets of 750
	// documents, 250 values each, the first and last _id of each the
	// first of its lowest value and the last of its highest.
	var buckets []string
	for j := range 4 {
		lo, hi := 250*j, 250*j+249
		maxV := hi + 1
		if j == 3 {
			maxV = hi
		}
		buckets = append(buckets, fmt.Sprintf(`{"_id": {"min": %d, "max": %d}, "n": 750, "first": %d, "last": %d}`, lo, maxV, lo, hi+2000))
	}
	wantBuckets := "[" + buckets[0] + "," + buckets[1] + "," + buckets[2] + "," + buckets[3] + "]"
	cases := []struct {
		stage, want string
	}{
		{bucketAuto, wantBuckets},
		{facet, fmt.Sprintf(`[{"n": [{"n": %d}], "top": [{"_id": %d}, {"_id": %d}], "b": %s}]`, n, n-1, n-2, wantBuckets)},
	}
	for _, c := range cases {
		got, err := e.Aggregate(ctx, "db", "c", stagesOf(t, c.stage), AggregateOptions{AllowDiskUse: true})
		if err != nil {
			t.Fatalf("%s: %v", c.stage, err)
		}
		var want bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(`{"a": `+c.want+`}`), false, &want); err != nil {
			t.Fatal(err)
		}
		wantDocs, _ := want.Lookup("a").Array().Values()
		if len(got) != len(wantDocs) {
			t.Fatalf("%s: %d documents, want %d", c.stage, len(got), len(wantDocs))
		}
		for i := range got {
			if got[i].String() != wantDocs[i].Document().String() {
				t.Errorf("%s: document %d is %s, want %s", c.stage, i, got[i], wantDocs[i])
			}
		}
		if files := scratchFiles(t, e); len(files) != 0 {
			t.Errorf("temporary files left: %v", files)
		}
		_, err = e.Aggregate(ctx, "db", "c", stagesOf(t, c.stage), AggregateOptions{})
		if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
			t.Errorf("%s without allowDiskUse: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", c.stage, err)
		}
	}
}
