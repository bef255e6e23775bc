package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

func TestFacetSpillsWithBoundedHeap(t *testing.T) {
	// 48 MB of documents through a $facet with a blocking-stage limit of
	// 1 MiB and a request limit of 4 MiB: the input goes to disk once,
	// each pipeline reads it back, their own $sort and $group spill, and
	// the one document made is exact while the heap holds a few MiB.
	const (
		n, groups  = 48_000, 1000
		heapBudget = 12 << 20
	)
	stages := stagesOf(t, `{"$facet": {
		"byK": [{"$group": {"_id": "$k", "n": {"$sum": 1}, "total": {"$sum": "$v"}}}, {"$sort": {"_id": 1}}],
		"top": [{"$sort": {"v": -1}}, {"$limit": 3}, {"$project": {"_id": 1, "v": 1}}],
		"count": [{"$count": "n"}],
		"buckets": [{"$bucketAuto": {"groupBy": "$v", "buckets": 4}}],
		"some": [{"$match": {"_id": {"$lt": 3}}}, {"$project": {"_id": 1, "k": 1}}],
		"byV": [{"$sort": {"v": 1}}, {"$project": {"_id": 1}}]}}`)
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	p, err := Compile(stages, Options{AllowDiskUse: true, Scratch: sc, SortLimit: 1 << 20, MemLimit: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	docs, base, peak := runWatched(t, p, n, groups)

	// The model, from the documents' definition: {_id: i, k: i % groups,
	// v: permuted(i)}.
	byV := make([]int, n)
	for i := range n {
		byV[permuted(i, n)] = i
	}
	var byK, top, bucketsOut, some, sorted []string
	for k := range groups {
		total := 0
		for i := k; i < n; i += groups {
			total += permuted(i, n)
		}
		byK = append(byK, fmt.Sprintf(`{"_id": %d, "n": %d, "total": %d}`, k, n/groups, total))
	}
	for v := n - 1; v >= n-3; v-- {
		top = append(top, fmt.Sprintf(`{"_id": %d, "v": %d}`, byV[v], v))
	}
	for j := range 4 {
		maxV := (j + 1) * n / 4
		if j == 3 {
			maxV = n - 1
		}
		bucketsOut = append(bucketsOut, fmt.Sprintf(`{"_id": {"min": %d, "max": %d}, "count": %d}`, j*n/4, maxV, n/4))
	}
	for i := range 3 {
		some = append(some, fmt.Sprintf(`{"_id": %d, "k": %d}`, i, i%groups))
	}
	for _, id := range byV {
		sorted = append(sorted, fmt.Sprintf(`{"_id": %d}`, id))
	}
	want := fmt.Sprintf(`{"byK": [%s], "top": [%s], "count": [{"n": %d}], "buckets": [%s], "some": [%s], "byV": [%s]}`,
		strings.Join(byK, ","), strings.Join(top, ","), n, strings.Join(bucketsOut, ","), strings.Join(some, ","), strings.Join(sorted, ","))
	var wantDoc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(want), false, &wantDoc); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || !slices.Equal(docs[0], wantDoc) {
		t.Fatalf("$facet made %.3000s, want %.3000s", fmt.Sprint(docs), wantDoc)
	}

	checkSpilledRun(t, sc, dir, base, peak, n*1000, heapBudget)
}

func TestFacetWithoutDiskUse(t *testing.T) {
	// Without allowDiskUse, a blocking stage in a $facet fails past its
	// limit with 292, and nothing is written; the $facet itself blocks
	// nothing: MongoDB feeds its pipelines batch by batch, so a $count of
	// more than the limit needs no disk.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	opts := Options{Scratch: sc, SortLimit: 1 << 20, MemLimit: 8 << 20}
	for _, facet := range []string{`{"$facet": {"s": [{"$sort": {"v": 1}}]}}`, `{"$facet": {"n": [{"$count": "n"}], "g": [{"$group": {"_id": "$k", "pads": {"$push": "$pad"}}}]}}`} {
		p, err := Compile(stagesOf(t, facet), opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(context.Background(), generated(4000, 4000, nil)); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
			t.Errorf("%s over 4 MB with a limit of 1 MiB: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", facet, err)
		}
	}
	p, err := Compile(stagesOf(t, `{"$facet": {"n": [{"$count": "n"}]}}`), opts)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := p.Run(context.Background(), generated(4000, 4000, nil))
	if err != nil || fmt.Sprint(docs) != `[{"n": [{"n": {"$numberInt":"4000"}}]}]` {
		t.Errorf("$facet of a $count over 4 MB: %v, %v", docs, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("without allowDiskUse, the scratch directory was made: %v", err)
	}
}

func TestFacetOutputStaysOneDocument(t *testing.T) {
	// Spilling bounds what the $facet holds of its input, not the document
	// it makes: 20 MB of documents passed through are past 16 MiB.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	p, err := Compile(stagesOf(t, `{"$facet": {"all": [{"$match": {}}]}}`), Options{AllowDiskUse: true, Scratch: sc, SortLimit: 1 << 20, MemLimit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), generated(20_000, 1, nil)); mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Errorf("a $facet of 20 MB: %v, want BSONObjectTooLarge", err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after the run, the scratch directory holds %v (%v)", ents, err)
	}
}
