package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// generated is a Source of n documents {_id: i, k: i % groups, v, pad}
// made as they are read, so that nothing holds them but the pipeline; v
// is a permutation of 0..n-1. each is called with each index first.
func generated(n, groups int, each func(i int)) Source {
	pad := strings.Repeat("p", 900)
	return func(fn func(bson.Raw) error) error {
		for i := range n {
			if each != nil {
				each(i)
			}
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "k", Value: int32(i % groups)}, {Key: "v", Value: int32(permuted(i, n))}, {Key: "pad", Value: pad}})
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// permuted maps 0..n-1 onto itself; n must be prime to 7919.
func permuted(i, n int) int { return i * 7919 % n }

// heapPeak samples the live heap until stop, with garbage collected often
// so that the samples are of what is held, not what is left to collect.
type heapPeak struct {
	mu    sync.Mutex
	peak  uint64
	stop  chan struct{}
	done  chan struct{}
	reset int
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func watchHeap(t *testing.T) *heapPeak {
	old := debug.SetGCPercent(5)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	h := &heapPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			h.sample()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapPeak) sample() {
	v := liveHeap()
	h.mu.Lock()
	h.peak = max(h.peak, v)
	h.mu.Unlock()
}

// forced collects garbage and samples, for the points the ticker may miss.
func (h *heapPeak) forced() {
	runtime.GC()
	h.sample()
}

func (h *heapPeak) end() uint64 {
	h.forced()
	close(h.stop)
	<-h.done
	return h.peak
}

func TestSpillingPipelineHoldsItsBudget(t *testing.T) {
	// 48 MB of documents through $sort, $group and $sort with a memory
	// limit of 4 MiB and a blocking-stage limit of 1 MiB: with
	// allowDiskUse, each spills what passes 1 MiB and the pipeline ends
	// with the exact result, holding a few MiB at most.
	const (
		n, groups  = 48_000, 12_000
		sortLimit  = 1 << 20
		memLimit   = 4 << 20
		dataBytes  = n * 1000
		heapBudget = 12 << 20 // the limits, merge buffers and slack
	)
	stages := stagesOf(t,
		`{"$sort": {"v": 1}}`,
		`{"$group": {"_id": "$k", "n": {"$sum": 1}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"}, "total": {"$sum": "$v"}, "ids": {"$push": "$_id"}}}`,
		`{"$sort": {"total": -1, "_id": 1}}`,
	)
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	p, err := Compile(stages, Options{AllowDiskUse: true, Scratch: sc, SortLimit: sortLimit, MemLimit: memLimit})
	if err != nil {
		t.Fatal(err)
	}

	docs, base, peak := runWatched(t, p, n, groups)

	// The expected groups, by a model: documents in order of v.
	type group struct {
		n, total  int
		ids       []int32
		first, id int32
	}
	model := make([]group, groups)
	byV := make([]int32, n)
	for i := range n {
		byV[permuted(i, n)] = int32(i)
	}
	for _, id := range byV {
		g := &model[int(id)%groups]
		g.id = id % groups
		g.n++
		g.total += permuted(int(id), n)
		g.ids = append(g.ids, id)
	}
	slices.SortFunc(model, func(a, b group) int {
		if a.total != b.total {
			return b.total - a.total
		}
		return int(a.id - b.id)
	})
	if len(docs) != groups {
		t.Fatalf("%d groups, want %d", len(docs), groups)
	}
	for i, d := range docs {
		g := model[i]
		want := fmt.Sprintf(`{"_id": %d,"n": %d,"first": %d,"last": %d,"total": %d,"ids": [%s]}`,
			g.id, g.n, g.ids[0], g.ids[len(g.ids)-1], g.total, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(g.ids)), ","), "[]"))
		var wantDoc bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(want), false, &wantDoc); err != nil {
			t.Fatal(err)
		}
		if got := d.String(); got != wantDoc.String() {
			t.Fatalf("output %d: %s, want %s", i, got, wantDoc)
		}
	}

	checkSpilledRun(t, sc, dir, base, peak, dataBytes/2, heapBudget)
}

func TestBlockingStagesWithoutDiskUse(t *testing.T) {
	// The same stages without allowDiskUse fail past the blocking-stage
	// limit with MongoDB's 292, and write nothing.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	for _, stage := range []string{`{"$sort": {"v": 1}}`, `{"$group": {"_id": "$k", "pads": {"$push": "$pad"}}}`} {
		p, err := Compile(stagesOf(t, stage), Options{Scratch: sc, SortLimit: 1 << 20, MemLimit: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Run(context.Background(), generated(4000, 4000, nil))
		if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
			t.Errorf("%s over 4 MB with a limit of 1 MiB: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", stage, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("without allowDiskUse, the scratch directory was made: %v", err)
	}
}

func TestSpillingKeepsTheRequestLimit(t *testing.T) {
	// Spilling bounds what a stage holds, not what the pipeline returns:
	// a $sort of 4 MB spills, and then its output passes the request's 2
	// MiB.
	sc := spill.New(spill.Config{Dir: filepath.Join(t.TempDir(), "_tmp", "1")})
	defer sc.Close()
	p, err := Compile(stagesOf(t, `{"$sort": {"v": 1}}`), Options{AllowDiskUse: true, Scratch: sc, SortLimit: 1 << 20, MemLimit: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background(), generated(4000, 1, nil))
	if mongoerr.CodeOf(err) != mongoerr.ExceededMemoryLimit {
		t.Errorf("a sorted output of 4 MB with a request limit of 2 MiB: %v, want ExceededMemoryLimit", err)
	}
	// With a $limit after the $sort, what is returned fits.
	p, err = Compile(stagesOf(t, `{"$sort": {"v": -1}}`, `{"$limit": 3}`, `{"$project": {"_id": 0, "v": 1}}`), Options{AllowDiskUse: true, Scratch: sc, SortLimit: 1 << 20, MemLimit: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := p.Run(context.Background(), generated(4001, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(docs); got != `[{"v": {"$numberInt":"4000"}} {"v": {"$numberInt":"3999"}} {"v": {"$numberInt":"3998"}}]` {
		t.Errorf("the top three: %s", got)
	}
}

func TestSortUnderALimitHoldsTheLimit(t *testing.T) {
	// As MongoDB's $sort followed by $limit, the sort holds the documents
	// the limit lets through: 4 MB sorted under a limit of 1 MiB without
	// disk use, for a small $limit.
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	run := func(allowDiskUse bool, limit int) ([]bson.Raw, error) {
		p, err := Compile(stagesOf(t, `{"$sort": {"k": -1}}`, fmt.Sprintf(`{"$limit": %d}`, limit), `{"$project": {"_id": 1}}`),
			Options{AllowDiskUse: allowDiskUse, Scratch: sc, SortLimit: 1 << 20, MemLimit: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return p.Run(context.Background(), generated(4000, 10, nil))
	}
	// k is _id % 10: the first with k 9 are _id 9, 19, 29, ... in the
	// order they came, as a stable sort.
	want := func(n int) string {
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf(`{"_id": {"$numberInt":"%d"}}`, 9+10*i))
		}
		return "[" + strings.Join(ids, " ") + "]"
	}
	for _, disk := range []bool{false, true} {
		docs, err := run(disk, 5)
		if err != nil {
			t.Fatalf("allowDiskUse %v: $sort and $limit 5 over 4 MB: %v", disk, err)
		}
		if got := fmt.Sprint(docs); got != want(5) {
			t.Errorf("allowDiskUse %v: %s, want %s", disk, got, want(5))
		}
	}
	// 2000 documents of 1 KB pass the sort limit: 292 without disk use.
	if _, err := run(false, 2000); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("$limit of 2 MB past a sort limit of 1 MiB: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a sort under a small limit wrote to disk: %v", err)
	}
	// With it, they and the rest spill.
	docs, err := run(true, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2000 || fmt.Sprint(docs[:400]) != want(400) {
		t.Errorf("$limit 2000 with allowDiskUse: %d documents, not starting with the 400 of k 9 in order", len(docs))
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("$limit 2000 with allowDiskUse did not spill: %v", err)
	}
}

func TestUnwindFlowsIntoASpillingGroup(t *testing.T) {
	// $unwind before $group, the commonest report: the unwound documents
	// (8 MB) reach the $group one at a time, which spills them past
	// 256 KiB, rather than being held whole past the request's 4 MiB.
	const n, groups = 2000, 2000
	dir := filepath.Join(t.TempDir(), "_tmp", "1")
	sc := spill.New(spill.Config{Dir: dir})
	defer sc.Close()
	p, err := Compile(stagesOf(t,
		`{"$addFields": {"tags": [1, 2, 3, 4]}}`,
		`{"$unwind": "$tags"}`,
		`{"$group": {"_id": "$k", "n": {"$sum": 1}, "tags": {"$sum": "$tags"}}}`,
		`{"$sort": {"_id": 1}}`,
	), Options{AllowDiskUse: true, Scratch: sc, SortLimit: 256 << 10, MemLimit: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := p.Run(context.Background(), generated(n, groups, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != groups {
		t.Fatalf("%d groups, want %d", len(docs), groups)
	}
	for k, d := range docs {
		want := fmt.Sprintf(`{"_id": {"$numberInt":"%d"},"n": {"$numberInt":"4"},"tags": {"$numberInt":"10"}}`, k)
		if got := d.String(); got != want {
			t.Fatalf("group %d: %s, want %s", k, got, want)
		}
	}
	if _, peak := sc.Used(); peak == 0 {
		t.Error("the $group did not spill")
	}
}

// runWatched runs p over n generated documents in groups and returns its
// output, with the live heap before the run and at its peak.
func runWatched(t *testing.T, p *Pipeline, n, groups int) (docs []bson.Raw, base, peak uint64) {
	t.Helper()
	runtime.GC()
	base = liveHeap()
	h := watchHeap(t)
	docs, err := p.Run(context.Background(), generated(n, groups, func(i int) {
		if i%4000 == 0 {
			h.forced()
		}
	}))
	peak = h.end()
	if err != nil {
		t.Fatal(err)
	}
	return docs, base, peak
}

// checkSpilledRun checks what a spilling run left behind: that sc held at
// least minSpilled bytes of runs at once, that the live heap grew from
// base to peak by at most budget, and that the scratch directory dir is
// empty and goes when sc closes.
func checkSpilledRun(t *testing.T, sc *spill.Scratch, dir string, base, peak uint64, minSpilled, budget int64) {
	t.Helper()
	_, spilled := sc.Used()
	t.Logf("%d MB spilled at most at once, live heap %d KiB at the start and %d KiB at the peak", spilled>>20, base>>10, peak>>10)
	if spilled < minSpilled {
		t.Errorf("%d bytes spilled at once at most, want at least %d", spilled, minSpilled)
	}
	if grew := int64(peak) - int64(base); grew > budget {
		t.Errorf("the live heap grew by %d bytes, past %d: the stages did not hold to their budget", grew, budget)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("after the run, the scratch directory holds %v (%v)", ents, err)
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the scratch directory survives Close: %v", err)
	}
}
