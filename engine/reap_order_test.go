package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/record"
)

// TestPurgeDeletesInKeyOrder: a purge deletes its documents in key order,
// then their expiry entries in key order. pebble inserts a batch into its
// memtable in the batch's order, and finds the place of each key from the
// place of the one before when they are near: deletions that alternated
// between the documents and the entries were a search from the top each,
// about a tenth of a purge (BenchmarkReap). The documents' ttl values make
// the entries' order differ from the documents'.
func TestPurgeDeletesInKeyOrder(t *testing.T) {
	ctx := context.Background()
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(epoch)
	ps, err := pebblekv.Open(t.TempDir(), pebblekv.Options{MinFreeDisk: -1})
	if err != nil {
		t.Fatal(err)
	}
	s := &recordingStore{Store: ps}
	e, err := Open(t.TempDir(), Options{Clock: clk, NoReaper: true, Oplog: true, Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: -1}})
	if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	const docs = 300
	batch := make([]bson.Raw, docs)
	for i := range batch {
		batch[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: int32(i)}, {Key: "ttl", Value: int32(1 + (docs-i)%7)}})
	}
	if _, err := e.Insert(ctx, "db", "c", batch, true); err != nil {
		t.Fatal(err)
	}
	s.take()
	clk.Advance(8 * time.Second)
	if n, err := e.Reaper().Pass(); err != nil || n != docs {
		t.Fatalf("pass purged %d, %v; want %d", n, err, docs)
	}
	commits := s.take()
	// The purge's transactions are those that delete the collection's
	// documents; any other work of the engine's is left out.
	lo, hi := record.DocRange(e.collection("db", "c").st().meta.ID)
	deleted := 0
	for _, c := range commits {
		keys := c.deleted
		if len(keys) == 0 || bytes.Compare(keys[0], lo) < 0 || bytes.Compare(keys[0], hi) >= 0 {
			continue
		}
		deleted += len(keys)
		// Two ascending runs: the documents', then the entries'.
		descents := 0
		for i := 1; i < len(keys); i++ {
			if bytes.Compare(keys[i], keys[i-1]) < 0 {
				descents++
			}
		}
		if descents > 1 {
			t.Errorf("a purge of %d keys went back %d times; want the documents, then the entries, each in key order", len(keys), descents)
		}
	}
	if deleted != 2*docs {
		t.Fatalf("the purge deleted %d keys in %d transactions; want %d: a document and its entry each", deleted, len(commits), 2*docs)
	}
}
