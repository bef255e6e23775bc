package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/oplog"
	"github.com/lethedb/lethe/ttlindex"
)

// TestTimeOrderedKeysSpreadOnTiKV: on TiKV (its mock), documents inserted
// in _id order, their _ts expiry entries and their oplog entries are
// stored over many buckets rather than at the end of one range, while
// the engine reads them back in _id order (issue 21). On pebble they are
// stored as the engine writes them.
func TestTimeOrderedKeysSpreadOnTiKV(t *testing.T) {
	for _, tc := range []struct {
		backend string
		spread  bool
	}{{"pebble", false}, {"tikv-mock", true}} {
		t.Run(tc.backend, func(t *testing.T) {
			clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e, err := openModelEngine(tc.backend, t.TempDir(), Options{Clock: clk, NoReaper: true, Oplog: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			regressCreateIndex(t, e, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: int32(3600)}})
			var ids []bson.ObjectID
			for i := range 64 {
				id := bson.NewObjectIDFromTimestamp(clk.Now().Add(time.Duration(i) * time.Second))
				ids = append(ids, id)
				if _, err := e.Insert(ctx, "db", "c", []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "i", Value: i}})}, true); err != nil {
					t.Fatal(err)
				}
				clk.Advance(time.Second)
			}
			cur, err := e.Find(ctx, "db", "c", FindSpec{Sort: txnDoc(t, bson.D{{Key: "_id", Value: 1}})})
			if err != nil {
				t.Fatal(err)
			}
			docs, err := cur.All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != len(ids) {
				t.Fatalf("found %d documents, want %d", len(docs), len(ids))
			}
			for i, d := range docs {
				if got := d.Lookup("_id").ObjectID(); got != ids[i] {
					t.Fatalf("document %d in _id order is %v, want %v", i, got, ids[i])
				}
			}
			raw := kv.Unwrap(e.store)
			for _, fam := range []struct {
				prefix byte
				header int
				min    int // keys of the family the inserts wrote, at least
			}{{record.PrefixDoc, 1 + 8, 64}, {ttlindex.KeyPrefix, 1 + 8 + 1, 64}, {oplog.Prefix, 1, 64}} {
				buckets := map[byte]int{}
				n := 0
				it, err := raw.Iter(ctx, []byte{fam.prefix}, []byte{fam.prefix + 1}, false)
				if err != nil {
					t.Fatal(err)
				}
				for ok := it.First(); ok; ok = it.Next() {
					if k := it.Key(); len(k) > fam.header {
						buckets[k[fam.header]]++
						n++
					}
				}
				if err := it.Close(); err != nil {
					t.Fatal(err)
				}
				if n < fam.min {
					t.Fatalf("family %q: %d stored keys, want at least %d", fam.prefix, n, fam.min)
				}
				// Unspread, the byte after the header is the first of an
				// ascending key: the same for all 64 (an ObjectId's time,
				// a millisecond count, a timestamp).
				if spread := len(buckets) >= 8; spread != tc.spread {
					t.Fatalf("family %q: the byte after the header takes %d values, want spread=%v", fam.prefix, len(buckets), tc.spread)
				}
			}
		})
	}
}
