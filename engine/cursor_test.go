package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/mongoerr"
)

// TestBlockingSortMemoryLimit: a sort no index provides holds at most the
// limit of documents unless the client allows disk use, as in MongoDB.
func TestBlockingSortMemoryLimit(t *testing.T) {
	e, err := Open(t.TempDir(), Options{Clock: clock.NewManual(time.Unix(0, 0)), NoReaper: true, SortMemoryLimit: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var docs []bson.Raw
	for i := 0; i < 100; i++ {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "v", Value: 100 - i}, {Key: "pad", Value: "0123456789012345678901234567890123456789"}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	sortV, _ := bson.Marshal(bson.D{{Key: "v", Value: 1}})
	_, err = e.Find(context.Background(), "db", "c", FindSpec{Sort: sortV})
	if mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Fatalf("sort over the limit: %v", err)
	}
	cur, err := e.Find(context.Background(), "db", "c", FindSpec{Sort: sortV, AllowDiskUse: true})
	if err != nil {
		t.Fatal(err)
	}
	all, err := cur.All(context.Background())
	if err != nil || len(all) != 100 || all[0].Lookup("v").Int32() != 1 {
		t.Fatalf("allowDiskUse sort: %d docs, %v", len(all), err)
	}
	// A sort the _id order provides holds nothing.
	sortID, _ := bson.Marshal(bson.D{{Key: "_id", Value: -1}})
	if _, err := e.Find(context.Background(), "db", "c", FindSpec{Sort: sortID}); err != nil {
		t.Fatalf("_id sort: %v", err)
	}
}

// TestScanStopsWhenContextEnds: a long scan gives up when the command's
// context (maxTimeMS, shutdown) ends, instead of running to the end.
func TestScanStopsWhenContextEnds(t *testing.T) {
	e := openTestEngine(t)
	var docs []bson.Raw
	for i := 0; i < 2000; i++ {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i % 7}})
		docs = append(docs, d)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	filter, _ := bson.Marshal(bson.D{{Key: "v", Value: 99}})
	if _, err := e.Count(ctx, "db", "c", filter, 0, 0, bson.RawValue{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("count with an ended context: %v", err)
	}
	sortV, _ := bson.Marshal(bson.D{{Key: "v", Value: 1}})
	if _, err := e.Find(ctx, "db", "c", FindSpec{Sort: sortV}); !errors.Is(err, context.Canceled) {
		t.Fatalf("blocking sort with an ended context: %v", err)
	}
	n, err := e.Count(context.Background(), "db", "c", filter, 0, 0, bson.RawValue{})
	if err != nil || n != 0 {
		t.Fatalf("count: %d %v", n, err)
	}
}
