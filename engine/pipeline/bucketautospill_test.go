package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

func TestBucketAutoSpillsWithBoundedHeap(t *testing.T) {
	// 48 MB of documents cut into 6 buckets by v, a permutation of
	// 0..n-1, with a blocking-stage limit of 1 MiB: with allowDiskUse the
	// sort by v spills and the buckets are cut as the runs merge, holding
	// a few MiB at most. Each bucket has n/6 documents, the v of
	// [j*n/6, (j+1)*n/6), its max the next one's min.
	const (
		n, buckets = 48_000, 6
		per        = n / buckets
		heapBudget = 12 << 20
	)
	stages := stagesOf(t, `{"$bucketAuto": {"groupBy": "$v", "buckets": 6, "output": {
		"n": {"$sum": 1}, "ids": {"$sum": "$_id"}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"},
		"lo": {"$min": "$_id"}, "hi": {"$max": "$_id"}}}}`)
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	p, err := Compile(stages, Options{AllowDiskUse: true, Scratch: sc, SortLimit: 1 << 20, MemLimit: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	docs, base, peak := runWatched(t, p, n, 1)

	// The model: the document of v is the i with permuted(i) == v.
	byV := make([]int, n)
	for i := range n {
		byV[permuted(i, n)] = i
	}
	if len(docs) != buckets {
		t.Fatalf("%d buckets, want %d", len(docs), buckets)
	}
	for j, d := range docs {
		ids := byV[j*per : (j+1)*per]
		sum, lo, hi := 0, n, -1
		for _, id := range ids {
			sum, lo, hi = sum+id, min(lo, id), max(hi, id)
		}
		maxV := (j + 1) * per
		if j == buckets-1 {
			maxV = n - 1
		}
		want := fmt.Sprintf(`{"_id": {"min": %d, "max": %d}, "n": %d, "ids": %d, "first": %d, "last": %d, "lo": %d, "hi": %d}`,
			j*per, maxV, per, sum, ids[0], ids[len(ids)-1], lo, hi)
		var wantDoc bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(want), false, &wantDoc); err != nil {
			t.Fatal(err)
		}
		if d.String() != wantDoc.String() {
			t.Errorf("bucket %d: %s, want %s", j, d, wantDoc)
		}
	}

	checkSpilledRun(t, sc, dir, base, peak, n*1000/2, heapBudget)

	// Without allowDiskUse, the sort of $bucketAuto fails past its limit.
	sc = spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	p, err = Compile(stages, Options{Scratch: sc, SortLimit: 1 << 20, MemLimit: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), generated(4000, 1, nil)); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("$bucketAuto over 4 MB with a limit of 1 MiB: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("without allowDiskUse, the scratch directory was made: %v", err)
	}
}

func TestBucketAutoSpilledCutsAsInMemory(t *testing.T) {
	// Values with many ties, of several types (1 and 1.0 are equal, and
	// keep the type of the first), missing ones (null), cut spilled and in
	// memory: the buckets, their bounds and order-dependent accumulators
	// are the same, with every granularity on numbers and without one on
	// everything.
	rng := rand.New(rand.NewPCG(11, 12))
	var mixed, numbers []bson.Raw
	for i := range 3000 {
		var v any
		switch r := rng.IntN(100); {
		case r < 40:
			v = int32(rng.IntN(60))
		case r < 60:
			v = float64(rng.IntN(60))
		case r < 70:
			v = rng.Float64() * 1000
		case r < 75:
			v = int64(rng.IntN(1 << 40))
		case r < 85:
			v = fmt.Sprint("s", rng.IntN(30))
		case r < 90:
			v = nil
		}
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: fmt.Sprintf("%0300d", i)}}
		if v != nil || rng.IntN(2) == 0 {
			d = append(d, bson.E{Key: "v", Value: v})
		}
		raw, _ := bson.Marshal(d)
		mixed = append(mixed, raw)
		if _, isString := v.(string); v != nil && !isString {
			numbers = append(numbers, raw)
		}
	}
	run := func(stages []bson.Raw, docs []bson.Raw, spills bool) ([]bson.Raw, int64) {
		t.Helper()
		opts := Options{SortLimit: 100 << 20}
		var sc *spill.Scratch
		if spills {
			sc = spill.New(spill.Config{FS: nil, Dir: filepath.Join(t.TempDir(), "_tmp")})
			defer sc.Close()
			opts = Options{AllowDiskUse: true, Scratch: sc, SortLimit: 16 << 10}
		}
		p, err := Compile(stages, opts)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background(), Slice(docs))
		if err != nil {
			t.Fatal(err)
		}
		var peak int64
		if sc != nil {
			_, peak = sc.Used()
		}
		return out, peak
	}
	grans := []string{"", "R5", "R10", "R20", "R40", "R80", "1-2-5", "E6", "E12", "E24", "E48", "E96", "E192", "POWERSOF2"}
	for _, gran := range grans {
		for _, buckets := range []int{1, 2, 7, 50, 400, 5000} {
			docs, g := mixed, ""
			if gran != "" {
				docs, g = numbers, fmt.Sprintf(`, "granularity": %q`, gran)
			}
			stages := stagesOf(t, fmt.Sprintf(`{"$bucketAuto": {"groupBy": "$v", "buckets": %d%s, "output": {
				"n": {"$sum": 1}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"}, "ids": {"$push": "$_id"}}}}`, buckets, g))
			want, _ := run(stages, docs, false)
			got, spilled := run(stages, docs, true)
			if spilled == 0 {
				t.Fatalf("granularity %q, %d buckets: nothing spilled", gran, buckets)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("granularity %q, %d buckets: spilled\n%.2000s\nwant\n%.2000s", gran, buckets, fmt.Sprint(got), fmt.Sprint(want))
			}
		}
	}
}
