package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
	"github.com/lethedb/lethe/mongoerr"
)

// scratchFiles is the temporary files under the data directory of e.
func scratchFiles(t *testing.T, e *Engine) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(e.scratchDir(), func(path string, d os.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestFindSortSpillsWithAllowDiskUse(t *testing.T) {
	// 3000 documents of about 1 KB past a sort limit of 64 KiB: with
	// allowDiskUse, MongoDB sorts externally; so does Lethe, and the cursor
	// hands them out in order however they are fetched.
	const n, sortLimit = 3000, 64 << 10
	e := limitedEngine(t, n, 1000, sortLimit, 2*sortLimit)
	ctx := context.Background()
	sortSpec, _ := bson.Marshal(bson.D{{Key: "big", Value: -1}, {Key: "_id", Value: -1}})
	if _, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec}); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("the sort without allowDiskUse: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
	cur, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(scratchFiles(t, e)) == 0 {
		t.Error("a sort of 3 MB with a limit of 64 KiB wrote no run")
	}
	// What the sorter kept, and what the cursor took of the runs.
	if held, most := cur.HeldBytes(), int64(sortLimit+refillBytes+2000); held > most {
		t.Errorf("the cursor holds %d bytes, past %d", held, most)
	}
	want := n - 1
	for !cur.Exhausted() {
		batch, err := cur.NextBatch(ctx, 101, 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range batch {
			if got := d.Lookup("_id").Int32(); got != int32(want) {
				t.Fatalf("document %d has _id %d, want %d", n-1-want, got, want)
			}
			want--
		}
	}
	if want != -1 {
		t.Errorf("%d documents, want %d", n-1-want, n)
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left after the cursor's end: %v", files)
	}

	// A cursor closed early takes its files along.
	cur, err = e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cur.NextBatch(ctx, 3, 16<<20); err != nil {
		t.Fatal(err)
	}
	if err := cur.Close(); err != nil {
		t.Fatal(err)
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left after Close: %v", files)
	}

	// The request's bound on temporary files.
	e.spillLimit = 1 << 20
	if _, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, AllowDiskUse: true}); mongoerr.CodeOf(err) != mongoerr.ExceededMemoryLimit {
		t.Errorf("a sort spilling past the bound of temporary files: %v, want ExceededMemoryLimit", err)
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left after a failed sort: %v", files)
	}
}

func TestSpillKeepsTheFreeSpaceReserve(t *testing.T) {
	// A spill that would eat into the free-space reserve fails with
	// OutOfDiskSpace rather than fill the disk.
	d := pebblekv.NewMemDisk(testDiskSize)
	e := openOnDisk(t, d)
	defer e.Close()
	var docs []bson.Raw
	for i := range 400 {
		docs = append(docs, padded(i))
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	e.sortLimit = 16 << 10
	sortSpec, _ := bson.Marshal(bson.D{{Key: "pad", Value: 1}})
	ctx := context.Background()
	cur, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, AllowDiskUse: true})
	if err != nil {
		t.Fatalf("a sort of 400 KB spilling with the disk not low: %v", err)
	}
	if all, err := cur.All(ctx); err != nil || len(all) != 400 {
		t.Fatalf("%d documents, %v", len(all), err)
	}
	// The insert's large batch is flushed to an sstable in the background,
	// which takes disk space of its own: let that happen first, so that
	// what the disk loses below is the spill's alone.
	if err := kv.Unwrap(e.store).(*pebblekv.Store).Flush(); err != nil {
		t.Fatal(err)
	}
	// Leave 100 KB above the reserve, less than the sort writes.
	d.TakeFreedSpace(testMinFree + 100<<10)
	_, err = e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, AllowDiskUse: true})
	if mongoerr.CodeOf(err) != mongoerr.OutOfDiskSpace {
		t.Fatalf("a spill past the free-space reserve: %v, want OutOfDiskSpace", err)
	}
	if free := d.Free(); free < testMinFree {
		t.Errorf("the spill left %d bytes free, below the reserve of %d", free, testMinFree)
	}
}

func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	stale := filepath.Join(dir, "_tmp", "7", "run-1")
	if err := os.MkdirAll(filepath.Dir(stale), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("left by a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := os.Stat(filepath.Join(dir, "_tmp")); !os.IsNotExist(err) {
		t.Errorf("temporary files survive a restart: %v", err)
	}
}

func TestAggregateSpillsAndRemovesItsFiles(t *testing.T) {
	// 3000 documents of 1 KB with a sort limit of 64 KiB and a request
	// limit of 256 KiB: the planned sort and the $group spill, and the
	// request's files go when it ends, whether it succeeds or fails.
	const n, groups = 3000, 1000
	e := limitedEngine(t, n, 1000, 64<<10, 256<<10)
	ctx := context.Background()
	pipe := func(last ...string) []bson.Raw {
		return stagesOf(t, append([]string{
			`{"$sort": {"big": 1, "_id": -1}}`,
			`{"$group": {"_id": {"$mod": ["$_id", 1000]}, "ids": {"$push": "$_id"}}}`,
			`{"$sort": {"_id": 1}}`,
		}, last...)...)
	}
	docs, err := e.Aggregate(ctx, "db", "c", pipe(), AggregateOptions{AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != groups {
		t.Fatalf("%d groups, want %d", len(docs), groups)
	}
	for k, d := range docs {
		want, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(k)}, {Key: "ids", Value: bson.A{int32(k + 2000), int32(k + 1000), int32(k)}}})
		if !bytes.Equal(d, want) {
			t.Fatalf("group %d: %s, want %s", k, d, bson.Raw(want))
		}
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
	if _, err := os.Stat(filepath.Join(e.scratchDir(), "1")); !os.IsNotExist(err) {
		t.Errorf("the request's scratch directory survives it: %v", err)
	}
	// A stage after the spilled ones fails.
	_, err = e.Aggregate(ctx, "db", "c", pipe(`{"$project": {"x": {"$add": ["$_id", "a"]}}}`), AggregateOptions{AllowDiskUse: true})
	if mongoerr.CodeOf(err) != mongoerr.TypeMismatch {
		t.Errorf("$add of a string: %v, want TypeMismatch", err)
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left after a failure: %v", files)
	}
	// Without allowDiskUse, 292 as ever.
	_, err = e.Aggregate(ctx, "db", "c", pipe(), AggregateOptions{})
	if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("without allowDiskUse: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
}

func TestFindSortUnderALimitKeepsOnlyTheFirst(t *testing.T) {
	// As MongoDB's sort under a limit, a find sorted without an index and
	// limited holds skip+limit documents, not every match: 3 MB of
	// matches with a sort limit of 64 KiB need no disk for the first 15.
	const n = 3000
	e := limitedEngine(t, n, 1000, 64<<10, 128<<10)
	ctx := context.Background()
	sortSpec, _ := bson.Marshal(bson.D{{Key: "big", Value: 1}, {Key: "_id", Value: -1}})
	ids := func(cur *Cursor) []int32 {
		t.Helper()
		all, err := cur.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []int32
		for _, d := range all {
			out = append(out, d.Lookup("_id").Int32())
		}
		return out
	}
	want := func(from, count int) []int32 {
		var out []int32
		for i := range count {
			out = append(out, int32(n-1-from-i))
		}
		return out
	}
	cur, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, Skip: 5, Limit: 10})
	if err != nil {
		t.Fatalf("sort of 3 MB under a limit of 10, without allowDiskUse: %v", err)
	}
	if held := cur.HeldBytes(); held > 15*1100 {
		t.Errorf("the cursor holds %d bytes for 15 documents", held)
	}
	if got := ids(cur); !slices.Equal(got, want(5, 10)) {
		t.Errorf("skip 5 limit 10: %v, want %v", got, want(5, 10))
	}
	// A hundred documents pass the sort limit: 292 without allowDiskUse,
	// a spill with it.
	if _, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, Limit: 100}); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("limit 100 of 1 KB past 64 KiB: %v, want QueryExceededMemoryLimitNoDiskUseAllowed", err)
	}
	cur, err = e.Find(ctx, "db", "c", FindSpec{Sort: sortSpec, Skip: 20, Limit: 100, AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(cur); !slices.Equal(got, want(20, 100)) {
		t.Errorf("skip 20 limit 100 with allowDiskUse: %v, want %v", got, want(20, 100))
	}
	if files := scratchFiles(t, e); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
}

// TestRemoteStoreScratchGoesWithTheEngine checks the temporary files of a
// store on other machines: they are in the system's temporary space, in a
// directory of this engine's alone (two engines of one process do not
// share it), and Close removes it, so that no run leaves one behind.
func TestRemoteStoreScratchGoesWithTheEngine(t *testing.T) {
	mock, err := tikvkv.NewMockCluster(tikvkv.FamilySplits("")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mock.Close() })
	open := func() *Engine {
		s, err := mock.Open(tikvkv.Options{Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		e, err := Open("", Options{Store: s, Clock: clock.NewManual(time.Unix(0, 0)), NoReaper: true, SortMemoryLimit: 64 << 10, QueryMemoryLimit: 128 << 10})
		if err != nil {
			t.Fatal(err)
		}
		// Should the test stop before Close.
		t.Cleanup(func() { os.RemoveAll(e.scratchDir()) })
		return e
	}
	e, other := open(), open()
	defer other.Close()
	if e.scratchDir() == other.scratchDir() || !strings.HasPrefix(e.scratchDir(), os.TempDir()) {
		t.Fatalf("scratch directories %q and %q: want two of their own under %s", e.scratchDir(), other.scratchDir(), os.TempDir())
	}
	big := strings.Repeat("x", 1000)
	var docs []bson.Raw
	for i := range 3000 {
		docs = append(docs, mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "big", Value: big}}))
	}
	ctx := context.Background()
	if _, err := e.Insert(ctx, "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	cur, err := e.Find(ctx, "db", "c", FindSpec{Sort: mustRaw(t, bson.D{{Key: "big", Value: 1}, {Key: "_id", Value: -1}}), AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(scratchFiles(t, e)) == 0 {
		t.Fatal("a sort of 3 MB with a limit of 64 KiB wrote no run")
	}
	// Left open on purpose: Close removes what a request still holds.
	_ = cur
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.scratchDir()); !os.IsNotExist(err) {
		t.Errorf("the scratch directory survives Close: %v", err)
	}
}
