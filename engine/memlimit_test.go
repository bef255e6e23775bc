package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/mongoerr"
)

// limitedEngine has n documents {_id: i, big: <size bytes>} in db.c and
// the given memory limits.
func limitedEngine(t *testing.T, n, size int, sortLimit, memLimit int64) *Engine {
	t.Helper()
	e, err := Open(t.TempDir(), Options{Clock: clock.NewManual(time.Unix(0, 0)), NoReaper: true, SortMemoryLimit: sortLimit, QueryMemoryLimit: memLimit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	big := strings.Repeat("x", size)
	var docs []bson.Raw
	for i := range n {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "big", Value: big}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	return e
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

func TestAggregateCountsComputedFields(t *testing.T) {
	// Small stored documents grow by $addFields past the sort limit: the
	// sort counts what it holds, not what was stored.
	e := limitedEngine(t, 20, 10, 1<<20, 64<<20)
	grow := `{"$addFields": {"pad": {"$reduce": {"input": {"$range": [0, 16]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}}}`
	ctx := context.Background()
	_, err := e.Aggregate(ctx, "db", "c", stagesOf(t, grow, `{"$sort": {"_id": -1}}`), AggregateOptions{AllowDiskUse: false})
	if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("$addFields then $sort: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
	// With allowDiskUse the sort spills, but the output of the pipeline is
	// held in memory, within the request's limit.
	docs, err := e.Aggregate(ctx, "db", "c", stagesOf(t, grow, `{"$sort": {"_id": -1}}`), AggregateOptions{AllowDiskUse: true})
	if err != nil || len(docs) != 20 {
		t.Errorf("with allowDiskUse: %d documents, %v", len(docs), err)
	}
	e.memLimit = 1 << 20
	_, err = e.Aggregate(ctx, "db", "c", stagesOf(t, grow, `{"$sort": {"_id": -1}}`), AggregateOptions{AllowDiskUse: true})
	if mongoerr.CodeOf(err) != mongoerr.ExceededMemoryLimit {
		t.Errorf("past the request's limit with allowDiskUse: %v, want ExceededMemoryLimit", err)
	}
	// So does a pipeline without a blocking stage, which Lethe holds all
	// the same.
	_, err = e.Aggregate(ctx, "db", "c", stagesOf(t, grow), AggregateOptions{AllowDiskUse: false})
	if mongoerr.CodeOf(err) != mongoerr.ExceededMemoryLimit {
		t.Errorf("$addFields past the request's limit: %v, want ExceededMemoryLimit", err)
	}
}

func TestAggregateGroupLimits(t *testing.T) {
	ctx := context.Background()
	// 40 documents of 1 KiB in one group: the $push would make a document
	// of 40 KiB.
	e := limitedEngine(t, 40, 1<<10, 16<<10, 64<<20)
	push := stagesOf(t, `{"$group": {"_id": null, "all": {"$push": "$big"}}}`)
	_, err := e.Aggregate(ctx, "db", "c", push, AggregateOptions{AllowDiskUse: false})
	if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("$group past the limit: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
	docs, err := e.Aggregate(ctx, "db", "c", push, AggregateOptions{AllowDiskUse: true})
	if err != nil || len(docs) != 1 {
		t.Errorf("$group with allowDiskUse: %d documents, %v", len(docs), err)
	}
}

func TestAggregateDocumentTooLarge(t *testing.T) {
	// 20 documents of 1 MiB pushed into one: 20 MiB, over MongoDB's 16 MiB.
	e := limitedEngine(t, 20, 1<<20, 100<<20, 256<<20)
	push := stagesOf(t, `{"$group": {"_id": null, "all": {"$push": "$big"}}}`)
	_, err := e.Aggregate(context.Background(), "db", "c", push, AggregateOptions{AllowDiskUse: false})
	if mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Errorf("$group making 20 MiB: %v, want BSONObjectTooLarge", err)
	}
	// Fifteen fit.
	docs, err := e.Aggregate(context.Background(), "db", "c", stagesOf(t, `{"$match": {"_id": {"$lt": 15}}}`, `{"$group": {"_id": null, "all": {"$push": "$big"}}}`), AggregateOptions{AllowDiskUse: false})
	if err != nil || len(docs) != 1 {
		t.Errorf("$group making 15 MiB: %d documents, %v", len(docs), err)
	}
}

func TestDistinctTooBig(t *testing.T) {
	e := limitedEngine(t, 0, 0, 100<<20, 256<<20)
	var docs []bson.Raw
	for i := range 20 {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "big", Value: strings.Repeat(string(rune('a'+i)), 1<<20)}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	// Twenty distinct values of 1 MiB pass the 16 MiB of a reply; fifteen
	// do not.
	if _, err := e.Distinct(context.Background(), "db", "c", "big", nil); mongoerr.CodeOf(err) != 17217 {
		t.Errorf("distinct of 20 MiB: %v, want code 17217", err)
	}
	filter, _ := bson.Marshal(bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 15}}}})
	if vals, err := e.Distinct(context.Background(), "db", "c", "big", filter); err != nil || len(vals) != 15 {
		t.Errorf("distinct of 15 MiB: %d values, %v", len(vals), err)
	}
}

func TestDistinctDeduplicates(t *testing.T) {
	e := limitedEngine(t, 0, 0, 100<<20, 256<<20)
	var docs []bson.Raw
	for i, v := range []any{1, 1.0, "a", bson.A{"a", 2}, int64(2), nil, bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 1}}} {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "v", Value: v}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	vals, err := e.Distinct(context.Background(), "db", "c", "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vals {
		got = append(got, v.String())
	}
	// Numbers equal in value are one value, as in MongoDB.
	if want := 5; len(vals) != want {
		t.Errorf("distinct = %v, want %d values: null, 1, 2, \"a\", {x: 1}", got, want)
	}
}
