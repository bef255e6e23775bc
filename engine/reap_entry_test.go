package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// TestPurgeByEntryAndByDocument: in a collection without secondary
// indexes the reaper purges from the expiry entries, which name each
// document's _id; entries stored empty, as they were before they named
// it, make it read the documents instead. Either way every due document
// goes, and each purge's oplog entry names the document's own _id, of its
// own BSON type, with the instant it expired: _ts plus the collection's
// lifetime, or plus the document's own ttl.
func TestPurgeByEntryAndByDocument(t *testing.T) {
	ctx := context.Background()
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(epoch)
	e, err := Open(t.TempDir(), Options{Clock: clk, NoReaper: true, Oplog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 5}})
	if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	// _ids of several types; odd documents carry their own ttl of 7 s, and
	// one never expires.
	ids := []any{int32(1), int64(2), 3.5, "four", bson.NewObjectID(), bson.D{{Key: "a", Value: 6}}, int32(7), "eight"}
	want := map[string]int64{}
	var docs []bson.Raw
	for i, id := range ids {
		d := bson.D{{Key: "_id", Value: id}}
		at := epoch.Add(5 * time.Second)
		if i%2 == 1 {
			d = append(d, bson.E{Key: "ttl", Value: int32(7)})
			at = epoch.Add(7 * time.Second)
		}
		raw, _ := bson.Marshal(d)
		docs = append(docs, raw)
		want[bson.Raw(mustIDDoc(t, raw)).String()] = at.UnixMilli()
	}
	never, _ := bson.Marshal(bson.D{{Key: "_id", Value: "never"}, {Key: "ttl", Value: int32(-1)}})
	if _, err := e.Insert(ctx, "db", "c", append(docs, never), true); err != nil {
		t.Fatal(err)
	}
	// Half of the entries as they were stored before they held the _id.
	tx, err := e.store.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := tx.Iter(ctx, []byte{ttlindex.KeyPrefix}, []byte{ttlindex.KeyPrefix + 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	var emptied int
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Value()) == 0 {
			t.Fatalf("expiry entry %x holds nothing; want the document's _id", it.Key())
		}
		if emptied%2 == 0 {
			if err := tx.Set(append([]byte(nil), it.Key()...), nil); err != nil {
				t.Fatal(err)
			}
		}
		emptied++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	if emptied != len(ids) {
		t.Fatalf("%d expiry entries, want one per expiring document (%d)", emptied, len(ids))
	}

	// At 6 s only the documents under the collection's 5 s are due.
	clk.Advance(6 * time.Second)
	if n, err := e.Reaper().Pass(); err != nil || n != len(ids)/2 {
		t.Fatalf("pass at 6 s purged %d, %v; want %d", n, err, len(ids)/2)
	}
	clk.Advance(2 * time.Second)
	if n, err := e.Reaper().Pass(); err != nil || n != len(ids)/2 {
		t.Fatalf("pass at 8 s purged %d, %v; want %d", n, err, len(ids)/2)
	}
	got := map[string]int64{}
	if _, err := e.ReadOplog(ctx, oplog.Timestamp{}, func(_ oplog.Timestamp, raw bson.Raw) (bool, error) {
		if op := raw.Lookup("op").StringValue(); op != "d" {
			return true, nil
		}
		at, ok := raw.Lookup("expiredAt").DateTimeOK()
		if !ok {
			return false, fmt.Errorf("purge entry %s has no expiredAt", raw)
		}
		got[raw.Lookup("o").Document().String()] = at
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("purge entries %v, want %v", got, want)
	}
	for id, at := range want {
		if got[id] != at {
			t.Errorf("purge of %s expired at %v, want %v", id, time.UnixMilli(got[id]).UTC(), time.UnixMilli(at).UTC())
		}
	}
	n, err := e.Count(ctx, "db", "c", nil, 0, 0, bson.RawValue{})
	if err != nil || n != 1 {
		t.Fatalf("count after the purges: %d, %v; want the one that never expires", n, err)
	}
}

func mustIDDoc(t *testing.T, doc bson.Raw) bson.Raw {
	t.Helper()
	v, err := doc.LookupErr("_id")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bson.Marshal(bson.D{{Key: "_id", Value: v}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
