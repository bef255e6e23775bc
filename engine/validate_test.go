package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/engine/storagecheck"
	"github.com/lethedb/lethe/ttlindex"
)

func mustMarshal(t testing.TB, v any) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// validateFixture opens an engine whose collection db.c has every kind of
// index: multikey, partial, sparse, unique, a date TTL index and the _ts
// TTL index, and documents with and without their own ttl, some expired
// but not purged.
func validateFixture(t *testing.T) (*Engine, *clock.Manual) {
	t.Helper()
	e, clock := openTestEngineClock(t)
	specs := []bson.Raw{
		mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags"}}),
		mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_partial"},
			{Key: "partialFilterExpression", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}}}}),
		mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: -1}}}, {Key: "name", Value: "s_sparse"}, {Key: "sparse", Value: true}}),
		mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_unique"}, {Key: "unique", Value: true}}),
		mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_ttl"}, {Key: "expireAfterSeconds", Value: 60}}),
		mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 10}}),
	}
	if _, err := e.CreateIndexes(context.Background(), "db", "c", specs); err != nil {
		t.Fatal(err)
	}
	at := bson.NewDateTimeFromTime(clock.Now())
	docs := []bson.Raw{
		mustMarshal(t, bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"x", "y", "x"}}, {Key: "a", Value: 7}, {Key: "u", Value: 1}, {Key: "at", Value: at}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: 2}, {Key: "tags", Value: bson.A{}}, {Key: "a", Value: 3}, {Key: "s", Value: "s"}, {Key: "u", Value: 2}, {Key: "ttl", Value: -1}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 9}, {Key: "ttl", Value: 5}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: "four"}, {Key: "tags", Value: "z"}, {Key: "u", Value: 4}, {Key: "ttl", Value: 100}}),
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	// Documents 1 and 3 expire under the _ts default or their own ttl;
	// with no reaper they stay in storage with all their entries.
	clock.Advance(20 * time.Second)
	return e, clock
}

func mustValidate(t *testing.T, e *Engine, full bool) ValidateResult {
	t.Helper()
	res, err := e.Validate(context.Background(), "db", "c", full)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestValidateIntactStore(t *testing.T) {
	e, _ := validateFixture(t)
	for _, full := range []bool{false, true} {
		res := mustValidate(t, e, full)
		if !res.Valid || len(res.Errors) != 0 {
			t.Fatalf("full=%v: intact store reported invalid: %v", full, res.Errors)
		}
		want := map[string]int64{
			"_id_": 4, "tags": 5, // x, y; undefined for []; null; z
			"a_partial": 2, "s_sparse": 1, "u_unique": 4, "at_ttl": 4, // null where the field is missing
			"_ts_1": 3, // every document but the one with ttl -1
		}
		for name, n := range want {
			if res.KeysPerIndex[name] != n {
				t.Errorf("full=%v: keysPerIndex[%s] = %d, want %d", full, name, res.KeysPerIndex[name], n)
			}
		}
		if res.NRecords != 4 || res.NIndexes != 7 || len(res.Indexes) != 7 || res.Indexes[0] != "_id_" {
			t.Errorf("full=%v: nrecords %d, nIndexes %d, indexes %v", full, res.NRecords, res.NIndexes, res.Indexes)
		}
	}
}

// indexOf returns the compiled index named name of db.c.
func indexOf(t *testing.T, e *Engine, name string) (*collState, *record.Index) {
	t.Helper()
	st := e.collection("db", "c").st()
	for _, ix := range st.indexes {
		if ix.Meta.Name == name {
			return st, ix
		}
	}
	t.Fatalf("no index %s", name)
	return nil, nil
}

func pkOf(v any) []byte {
	t, data, _ := bson.MarshalValue(v)
	return keycodec.Append(nil, bsoncore.Value{Type: bsoncore.Type(t), Data: data})
}

func TestValidateFindsCorruption(t *testing.T) {
	type counts struct {
		missing, extra, missingExpiry, extraExpiry, invalidDocs, records int64
	}
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, e *Engine)
		want    counts
		badIdx  string
	}{{
		name: "deleted index entry",
		corrupt: func(t *testing.T, e *Engine) {
			_, ix := indexOf(t, e, "tags")
			key := keycodec.Append(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "y")})
			rawDelete(t, e, ix.EntryKey(nil, key, pkOf(int32(1))))
		},
		want:   counts{missing: 1, records: 4},
		badIdx: "tags",
	}, {
		name: "deleted unique index entry",
		corrupt: func(t *testing.T, e *Engine) {
			_, ix := indexOf(t, e, "u_unique")
			key := keycodec.Append(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)})
			rawDelete(t, e, ix.EntryKey(nil, key, nil))
		},
		want:   counts{missing: 1, records: 4},
		badIdx: "u_unique",
	}, {
		name: "stray index entry",
		corrupt: func(t *testing.T, e *Engine) {
			_, ix := indexOf(t, e, "a_partial")
			pk := pkOf(int32(99))
			key := keycodec.Append(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 50)})
			rawSet(t, e, ix.EntryKey(nil, key, pk), pk)
		},
		want:   counts{extra: 1, records: 4},
		badIdx: "a_partial",
	}, {
		name: "index entry for a document outside the partial filter",
		corrupt: func(t *testing.T, e *Engine) {
			_, ix := indexOf(t, e, "a_partial")
			pk := pkOf(int32(2))
			key := keycodec.Append(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 3)})
			rawSet(t, e, ix.EntryKey(nil, key, pk), pk)
		},
		want:   counts{extra: 1, records: 4},
		badIdx: "a_partial",
	}, {
		name: "deleted expiry entry",
		corrupt: func(t *testing.T, e *Engine) {
			st := e.collection("db", "c").st()
			d, err := e.loadDoc(context.Background(), e.store, st.meta.ID, pkOf(int32(3)))
			if err != nil || d == nil {
				t.Fatal(d, err)
			}
			rawDelete(t, e, expiryKey(st.meta.ID, d))
		},
		want:   counts{missingExpiry: 1, records: 4},
		badIdx: "_ts_1",
	}, {
		name: "stray expiry entry",
		corrupt: func(t *testing.T, e *Engine) {
			st := e.collection("db", "c").st()
			// Document 2 has ttl -1 and so no expiry entry.
			rawSet(t, e, ttlindex.AppendTSKey(nil, st.meta.ID, 5, pkOf(int32(2))), nil)
		},
		want:   counts{extraExpiry: 1, records: 4},
		badIdx: "_ts_1",
	}, {
		name: "stray document without entries",
		corrupt: func(t *testing.T, e *Engine) {
			st := e.collection("db", "c").st()
			doc := mustMarshal(t, bson.D{{Key: "_id", Value: int32(5)}, {Key: "tags", Value: bson.A{"p", "q"}}, {Key: "u", Value: 5}})
			val := record.AppendHeader(nil, record.Header{TS: 1})
			val = append(val, doc...)
			rawSet(t, e, record.DocKey(nil, st.meta.ID, pkOf(int32(5))), val)
		},
		// tags p and q, u 5, at null; its _ts expiry entry.
		want: counts{missing: 4, missingExpiry: 1, records: 5},
	}, {
		name: "document with a broken header",
		corrupt: func(t *testing.T, e *Engine) {
			st := e.collection("db", "c").st()
			rawSet(t, e, record.DocKey(nil, st.meta.ID, pkOf(int32(2))), []byte{9, 9})
		},
		// Its entries (tags undefined, s, u 2, at null) now belong to no
		// valid document.
		want: counts{invalidDocs: 1, extra: 4, records: 4},
	}, {
		name: "document whose _id is not its key",
		corrupt: func(t *testing.T, e *Engine) {
			st := e.collection("db", "c").st()
			doc := mustMarshal(t, bson.D{{Key: "_id", Value: int32(6)}})
			val := append(record.AppendHeader(nil, record.Header{TS: 1, TTL: ttlindex.Never}), doc...)
			rawSet(t, e, record.DocKey(nil, st.meta.ID, pkOf(int32(7))), val)
		},
		want: counts{invalidDocs: 1, records: 5},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := validateFixture(t)
			tc.corrupt(t, e)
			for _, full := range []bool{false, true} {
				res := mustValidate(t, e, full)
				got := counts{res.MissingIndexEntries, res.ExtraIndexEntries, res.MissingExpiryEntries, res.ExtraExpiryEntries, res.NInvalidDocuments, res.NRecords}
				if res.Valid || len(res.Errors) == 0 {
					t.Errorf("full=%v: corrupt store reported valid", full)
				}
				if got != tc.want {
					t.Errorf("full=%v: got %+v, want %+v; errors %v", full, got, tc.want, res.Errors)
				}
				if tc.badIdx != "" && !res.InvalidIndexes[tc.badIdx] {
					t.Errorf("full=%v: index %s not reported invalid: %v", full, tc.badIdx, res.InvalidIndexes)
				}
			}
		})
	}
}

func TestValidateStopsWhenContextEnds(t *testing.T) {
	e, _ := validateFixture(t)
	var docs []bson.Raw
	for i := 0; i < 2*storagecheck.CheckEvery; i++ {
		// Each has its own u: the unique index holds a missing u as null.
		docs = append(docs, mustMarshal(t, bson.D{{Key: "_id", Value: 100 + i}, {Key: "u", Value: 100 + i}}))
	}
	if res, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Validate(ctx, "db", "c", true); !errors.Is(err, context.Canceled) {
		t.Fatalf("Validate with an ended context: %v, want context.Canceled", err)
	}
}

// TestValidateUnderConcurrentWrites validates while writers insert and
// delete: the snapshot must keep it from reporting half-written documents.
func TestValidateUnderConcurrentWrites(t *testing.T) {
	e, _ := validateFixture(t)
	ctx := context.Background()
	stop := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := 1000*(w+1) + i%50
				doc := mustMarshal(t, bson.D{{Key: "_id", Value: id}, {Key: "tags", Value: bson.A{i, i + 1}}, {Key: "a", Value: i % 10}, {Key: "u", Value: id}})
				if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{doc}, true); err != nil {
					t.Error(err)
					return
				}
				if _, err := e.Delete(ctx, "db", "c", mustMarshal(t, bson.D{{Key: "_id", Value: id}}), 1, bson.RawValue{}); err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		}(w)
	}
	// Validate until the writers have done a good number of writes, so
	// that many validations overlap with them.
	for i := 0; i < 20 || writes.Load() < 300; i++ {
		res := mustValidate(t, e, i%2 == 0)
		if !res.Valid {
			t.Errorf("validate during writes reported %v", res.Errors)
			break
		}
	}
	close(stop)
	wg.Wait()
}
