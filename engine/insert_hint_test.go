package engine

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
)

// TestInsertHintsEachTransaction inserts 20,000 small documents (2 MB) in
// one statement, with the oplog on: it commits in transactions of
// maxBatchOps documents, and each tells the store the size of its own
// documents, not of the statement's rest. The insert allocates 38 MB with
// such hints or none; a hint from the rest reserved 4.5 MB for each of
// twenty 225 kB transactions, and it allocated 80 MB.
func TestInsertHintsEachTransaction(t *testing.T) {
	e := openOplogEngine(t, t.TempDir(), clock.NewManual(time.Unix(1_700_000_000, 0)), Options{})
	defer e.Close()
	const n = 20_000
	docs := make([]bson.Raw, n)
	written := 0
	for i := range docs {
		docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: "0123456789012345678901234567890123456789012345678901234567890123456789"}})
		written += len(docs[i])
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := e.Insert(context.Background(), "db", "c", docs, true)
	runtime.ReadMemStats(&after)
	if err != nil || res.N != n {
		t.Fatalf("insert: %d of %d, %v", res.N, n, err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d kB to insert %d kB", allocated>>10, written>>10)
	if allocated > 30*uint64(written) {
		t.Fatalf("allocated %d kB to insert %d kB in one statement", allocated>>10, written>>10)
	}
}
