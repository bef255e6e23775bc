package integration

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Blocking sorts and stages past the sort limit spill to disk, as MongoDB
// 6+ does by default: these tests run them over more data than a request
// may hold in memory and check the results, the heap and the temporary
// files.

// tempFiles is the temporary files under the server's data directory.
func tempFiles(t *testing.T, ts *testServer) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(ts.Dir, "_tmp"), func(path string, d os.DirEntry, err error) error {
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

// spillDocs is n documents {_id: i, k: i % groups, v: a permutation of
// 0..n-1, pad: 900 bytes}.
func insertSpillDocs(t *testing.T, coll *mongo.Collection, n, groups int) {
	t.Helper()
	pad := strings.Repeat("p", 900)
	for i := 0; i < n; i += 1000 {
		var docs []any
		for j := i; j < min(n, i+1000); j++ {
			docs = append(docs, bson.D{{Key: "_id", Value: int32(j)}, {Key: "k", Value: int32(j % groups)}, {Key: "v", Value: int32(j * 7919 % n)}, {Key: "pad", Value: pad}})
		}
		if _, err := coll.InsertMany(testCtx(t), docs); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSpillingUnderAttack(t *testing.T) {
	// 40 MB of documents against a sort limit of 1 MiB and a request limit
	// of 4 MiB: the sort and the $group spill, the results are exact and
	// the heap stays far below the data.
	const n, groups = 40_000, 10_000
	ts := startServer(t, withMemoryLimits(1<<20, 4<<20))
	db := attacker(t, ts)
	coll := db.Collection("c")
	insertSpillDocs(t, coll, n, groups)
	pipeline := mongo.Pipeline{
		{{Key: "$sort", Value: bson.D{{Key: "v", Value: 1}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}, {Key: "first", Value: bson.D{{Key: "$first", Value: "$_id"}}}, {Key: "last", Value: bson.D{{Key: "$last", Value: "$_id"}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	}
	type groupOut struct {
		ID          int32 `bson:"_id"`
		N           int32 `bson:"n"`
		First, Last int32
	}
	var groupsOut []groupOut
	var sortedIDs []int32
	var killedErr error
	// Garbage is collected often, so that the heap measured is mostly
	// what is held: it may grow by 16 MiB, under half the data, from what
	// it was (which the race detector makes much larger). The collector
	// also lets garbage reach a tenth of what was live before (GOGC 10),
	// whatever earlier tests left live in this process: the Go driver's
	// zstd encoders of TestCompression hold 44 MiB for good.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	settleHeap()
	base := heapObjects()
	underAttack(t, ts, attackBounds{MaxHeap: base + base/10 + 16<<20}, func(ctx context.Context) {
		cur, err := coll.Aggregate(ctx, pipeline)
		if err != nil {
			t.Errorf("aggregate: %v", err)
			return
		}
		if err := cur.All(ctx, &groupsOut); err != nil {
			t.Errorf("aggregate: %v", err)
		}
		// A find's blocking sort, read through getMore.
		fc, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "v", Value: -1}}).SetProjection(bson.D{{Key: "pad", Value: 0}}).SetBatchSize(1000))
		if err != nil {
			t.Errorf("find: %v", err)
			return
		}
		for fc.Next(ctx) {
			sortedIDs = append(sortedIDs, fc.Current.Lookup("_id").Int32())
		}
		if err := fc.Err(); err != nil {
			t.Errorf("find: %v", err)
		}
		fc.Close(ctx)
		// One closed after its first batch: killCursors removes its runs.
		fc, killedErr = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "v", Value: 1}}).SetBatchSize(10))
		if killedErr == nil {
			killedErr = fc.Close(ctx)
		}
	})
	if killedErr != nil {
		t.Errorf("find closed early: %v", killedErr)
	}

	// The model: the documents of group k are k, k+groups, ...; in order
	// of v, the first and last of them.
	if len(groupsOut) != groups {
		t.Fatalf("%d groups, want %d", len(groupsOut), groups)
	}
	for k, g := range groupsOut {
		want := groupOut{ID: int32(k), N: n / groups}
		for j := k; j < n; j += groups {
			v := j * 7919 % n
			if want.Last == 0 && j == k || v < int(want.First)*7919%n {
				want.First = int32(j)
			}
			if j == k || v > int(want.Last)*7919%n {
				want.Last = int32(j)
			}
		}
		if g != want {
			t.Fatalf("group %d: %+v, want %+v", k, g, want)
		}
	}
	if len(sortedIDs) != n {
		t.Fatalf("find: %d documents, want %d", len(sortedIDs), n)
	}
	for i, id := range sortedIDs {
		if v := int(id) * 7919 % n; v != n-1-i {
			t.Fatalf("find: document %d has v %d, want %d", i, v, n-1-i)
		}
	}
	if files := tempFiles(t, ts); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
}

func TestAllowDiskUseByDefault(t *testing.T) {
	// MongoDB 6+ spills by default; allowDiskUseByDefault: false brings
	// back the failure past the sort limit, and an explicit allowDiskUse
	// wins over the parameter.
	ts := startServer(t, withMemoryLimits(1<<20, 8<<20))
	coll := ts.Client.Database("spill").Collection("c")
	insertSpillDocs(t, coll, 3000, 3000)
	admin := ts.Client.Database("admin")
	if got := run(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: 1}}).Lookup("allowDiskUseByDefault"); got.Type != bson.TypeBoolean || !got.Boolean() {
		t.Errorf("getParameter allowDiskUseByDefault: %s, want true", got)
	}
	sortV := bson.D{{Key: "v", Value: 1}}
	group := mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "pads", Value: bson.D{{Key: "$push", Value: "$pad"}}}}}}, {{Key: "$count", Value: "n"}}}
	window := mongo.Pipeline{{{Key: "$setWindowFields", Value: bson.D{{Key: "partitionBy", Value: "$k"}, {Key: "sortBy", Value: sortV}, {Key: "output", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$count", Value: bson.D{}}}}}}}}}, {{Key: "$count", Value: "n"}}}
	check := func(what string, wantErr int) {
		t.Helper()
		cur, err := coll.Find(testCtx(t), bson.D{}, options.Find().SetSort(sortV).SetBatchSize(10))
		if wantErr == 0 && err != nil || wantErr != 0 && errCode(err) != wantErr {
			t.Errorf("%s: find sorted past the limit: %v, want code %d", what, err, wantErr)
		}
		if err == nil {
			// The open cursor keeps its sorted runs until it is closed.
			if len(tempFiles(t, ts)) == 0 {
				t.Errorf("%s: an open cursor over a spilled sort has no runs", what)
			}
			if err := cur.Close(testCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = coll.Aggregate(testCtx(t), group)
		if wantErr == 0 && err != nil || wantErr != 0 && errCode(err) != wantErr {
			t.Errorf("%s: $group past the limit: %v, want code %d", what, err, wantErr)
		}
		_, err = coll.Aggregate(testCtx(t), window)
		if wantErr == 0 && err != nil || wantErr != 0 && errCode(err) != wantErr {
			t.Errorf("%s: $setWindowFields past the limit: %v, want code %d", what, err, wantErr)
		}
	}
	check("by default", 0)
	was := run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: false}})
	if got := was.Lookup("was"); got.Type != bson.TypeBoolean || !got.Boolean() {
		t.Errorf("setParameter: was %s, want true", got)
	}
	check("with allowDiskUseByDefault false", 292)
	if cur, err := coll.Find(testCtx(t), bson.D{}, options.Find().SetSort(sortV).SetAllowDiskUse(true)); err != nil {
		t.Errorf("find with allowDiskUse: true over allowDiskUseByDefault false: %v", err)
	} else {
		cur.Close(testCtx(t))
	}
	if _, err := coll.Aggregate(testCtx(t), group, options.Aggregate().SetAllowDiskUse(true)); err != nil {
		t.Errorf("aggregate with allowDiskUse: true over allowDiskUseByDefault false: %v", err)
	}
	wantError(t, cmdError(t, ts.Client, "admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: "yes"}}), 2, "BadValue")
	run(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: true}})
	check("with allowDiskUseByDefault true again", 0)
	_, err := coll.Aggregate(testCtx(t), group, options.Aggregate().SetAllowDiskUse(false))
	wantCode(t, err, 292)
	if files := tempFiles(t, ts); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
}
