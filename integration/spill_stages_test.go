package integration

import (
	"context"
	"runtime/debug"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestBucketAutoAndFacetSpillUnderAttack(t *testing.T) {
	// 40 MB of documents against a sort limit of 1 MiB and a request limit
	// of 4 MiB: $bucketAuto sorts through disk and $facet spools its input
	// there, each of its pipelines reading it back; the results are exact,
	// the heap stays far below the data and no file is left. With
	// allowDiskUse: false both fail with 292.
	const n, groups, buckets = 40_000, 100, 5
	ts := startServer(t, withMemoryLimits(1<<20, 4<<20))
	db := attacker(t, ts)
	coll := db.Collection("c")
	insertSpillDocs(t, coll, n, groups)
	bucketAuto := bson.D{{Key: "$bucketAuto", Value: bson.D{
		{Key: "groupBy", Value: "$v"}, {Key: "buckets", Value: buckets},
		{Key: "output", Value: bson.D{
			{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "first", Value: bson.D{{Key: "$first", Value: "$_id"}}},
			{Key: "last", Value: bson.D{{Key: "$last", Value: "$_id"}}},
		}},
	}}}
	facet := bson.D{{Key: "$facet", Value: bson.D{
		{Key: "count", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}},
		{Key: "byK", Value: bson.A{
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		}},
		{Key: "top", Value: bson.A{
			bson.D{{Key: "$sort", Value: bson.D{{Key: "v", Value: -1}}}},
			bson.D{{Key: "$limit", Value: 2}},
			bson.D{{Key: "$project", Value: bson.D{{Key: "v", Value: 1}}}},
		}},
		{Key: "buckets", Value: bson.A{bucketAuto}},
	}}}
	type bucket struct {
		ID struct {
			Min int32 `bson:"min"`
			Max int32 `bson:"max"`
		} `bson:"_id"`
		N           int32 `bson:"n"`
		First, Last int32
	}
	type facetOut struct {
		Count []struct {
			N int32 `bson:"n"`
		} `bson:"count"`
		ByK []struct {
			ID    int32 `bson:"_id"`
			N     int32 `bson:"n"`
			Total int64 `bson:"total"`
		} `bson:"byK"`
		Top []struct {
			ID int32 `bson:"_id"`
			V  int32 `bson:"v"`
		} `bson:"top"`
		Buckets []bucket `bson:"buckets"`
	}
	var bucketsOut []bucket
	var facetsOut []facetOut
	// As in TestSpillingUnderAttack: garbage is collected often, and the
	// heap may grow by 16 MiB, under half the data, past what it was and
	// the collector's slack over it.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	settleHeap()
	base := heapObjects()
	underAttack(t, ts, attackBounds{MaxHeap: base + base/10 + 16<<20}, func(ctx context.Context) {
		cur, err := coll.Aggregate(ctx, mongo.Pipeline{bucketAuto})
		if err == nil {
			err = cur.All(ctx, &bucketsOut)
		}
		if err != nil {
			t.Errorf("$bucketAuto: %v", err)
		}
		cur, err = coll.Aggregate(ctx, mongo.Pipeline{facet})
		if err == nil {
			err = cur.All(ctx, &facetsOut)
		}
		if err != nil {
			t.Errorf("$facet: %v", err)
		}
	})

	// The model: v is a permutation of 0..n-1, so each bucket has n/5
	// documents, those of v in [j*n/5, (j+1)*n/5), in order of v.
	byV := make([]int32, n)
	for i := range n {
		byV[i*7919%n] = int32(i)
	}
	var want []bucket
	per := n / buckets
	for j := range buckets {
		var b bucket
		b.ID.Min, b.ID.Max = int32(j*per), int32((j+1)*per)
		if j == buckets-1 {
			b.ID.Max = n - 1
		}
		b.N, b.First, b.Last = int32(per), byV[j*per], byV[(j+1)*per-1]
		want = append(want, b)
	}
	checkBuckets := func(what string, got []bucket) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d buckets, want %d", what, len(got), len(want))
		}
		for j := range want {
			if got[j] != want[j] {
				t.Errorf("%s: bucket %d is %+v, want %+v", what, j, got[j], want[j])
			}
		}
	}
	checkBuckets("$bucketAuto", bucketsOut)
	if len(facetsOut) != 1 {
		t.Fatalf("$facet made %d documents, want 1", len(facetsOut))
	}
	f := facetsOut[0]
	checkBuckets("$facet's $bucketAuto", f.Buckets)
	if len(f.Count) != 1 || f.Count[0].N != n {
		t.Errorf("$facet's $count: %+v, want %d", f.Count, n)
	}
	if len(f.ByK) != groups {
		t.Fatalf("$facet's $group: %d groups, want %d", len(f.ByK), groups)
	}
	for k, g := range f.ByK {
		var total int64
		for i := k; i < n; i += groups {
			total += int64(i * 7919 % n)
		}
		if g.ID != int32(k) || g.N != n/groups || g.Total != total {
			t.Errorf("$facet's group %d: %+v, want n %d total %d", k, g, n/groups, total)
		}
	}
	if len(f.Top) != 2 || f.Top[0].ID != byV[n-1] || f.Top[0].V != n-1 || f.Top[1].ID != byV[n-2] || f.Top[1].V != n-2 {
		t.Errorf("$facet's top two: %+v", f.Top)
	}
	if files := tempFiles(t, ts); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}

	noDisk := options.Aggregate().SetAllowDiskUse(false)
	_, err := coll.Aggregate(testCtx(t), mongo.Pipeline{bucketAuto}, noDisk)
	wantCode(t, err, 292)
	// The $facet holds its input within the request's limit without disk
	// use, and its $sort of 3 MB fails.
	_, err = coll.Aggregate(testCtx(t), mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 3000}}}}}},
		{{Key: "$facet", Value: bson.D{{Key: "s", Value: bson.A{bson.D{{Key: "$sort", Value: bson.D{{Key: "v", Value: 1}}}}}}}}},
	}, noDisk)
	wantCode(t, err, 292)
}
