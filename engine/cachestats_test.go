package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/kv/pebblekv"
)

// TestCacheStatsCountBlockReads reads documents that were flushed to a
// file: the first pass misses the block cache and fills it, the second
// finds the same blocks there. The budget is the one the store was given.
func TestCacheStatsCountBlockReads(t *testing.T) {
	ctx := context.Background()
	s, err := pebblekv.Open(t.TempDir(), pebblekv.Options{MinFreeDisk: -1, CacheSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(t.TempDir(), Options{Store: s, NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs := make([]bson.Raw, 500)
	for i := range docs {
		docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: string(make([]byte, 1000))}})
	}
	if _, err := e.Insert(ctx, "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		for i := range docs {
			id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))}
			if d, err := e.FindByID(ctx, "db", "c", id); err != nil || d == nil {
				t.Fatalf("_id %d: %v, %v", i, d, err)
			}
		}
	}
	before, ok := e.CacheStats()
	if !ok || before.Capacity != 16<<20 {
		t.Fatalf("CacheStats = %+v, %v; want a budget of 16 MiB", before, ok)
	}
	readAll()
	first, _ := e.CacheStats()
	if first.Misses == before.Misses || first.Size == 0 {
		t.Fatalf("reading a flushed file missed no block: %+v, then %+v", before, first)
	}
	readAll()
	second, _ := e.CacheStats()
	if second.Misses != first.Misses || second.Hits-first.Hits < int64(len(docs)) {
		t.Fatalf("reading the same blocks again: %+v, then %+v; want hits only, one a document at least", first, second)
	}
}
