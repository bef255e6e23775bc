package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
)

// Tests of issue 9 on the write path: no request hangs, no write silently
// breaks a rule MongoDB enforces. Every step runs under a short deadline so
// that a hang fails the test instead of stalling the run.

// stepCtx bounds one step of a trust test.
func stepCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// dropPromptly drops coll under a deadline: a request that still holds the
// collection's locks makes it fail.
func dropPromptly(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	if err := coll.Drop(stepCtx(t)); err != nil {
		t.Fatalf("drop %s after the writes: %v", coll.Name(), err)
	}
}

func noReaper(c *server.Config) { c.NoReaper = true }

var (
	setX1 = bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}
	id5   = bson.D{{Key: "_id", Value: 5}}
)

// wantDoc fails unless the document with _id id has field x equal to x.
func wantX(t *testing.T, coll *mongo.Collection, id any, x int32) {
	t.Helper()
	var doc bson.M
	if err := coll.FindOne(stepCtx(t), bson.D{{Key: "_id", Value: id}}).Decode(&doc); err != nil {
		t.Fatalf("find _id %v: %v", id, err)
	}
	if doc["x"] != x {
		t.Fatalf("_id %v: got %v, want x: %d", id, doc, x)
	}
}

func TestTrustFindAndModifyUpsertMissingID(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	cases := []struct {
		name string
		run  func(coll *mongo.Collection) *mongo.SingleResult
		// want is the document returned, nil for none
		want bson.M
	}{
		{"update-before", func(coll *mongo.Collection) *mongo.SingleResult {
			return coll.FindOneAndUpdate(stepCtx(t), id5, setX1, options.FindOneAndUpdate().SetUpsert(true))
		}, nil},
		{"update-after", func(coll *mongo.Collection) *mongo.SingleResult {
			return coll.FindOneAndUpdate(stepCtx(t), id5, setX1, options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After))
		}, bson.M{"_id": int32(5), "x": int32(1)}},
		{"update-sorted", func(coll *mongo.Collection) *mongo.SingleResult {
			return coll.FindOneAndUpdate(stepCtx(t), id5, setX1, options.FindOneAndUpdate().SetUpsert(true).SetSort(bson.D{{Key: "x", Value: 1}}).SetReturnDocument(options.After))
		}, bson.M{"_id": int32(5), "x": int32(1)}},
		{"replace-before", func(coll *mongo.Collection) *mongo.SingleResult {
			return coll.FindOneAndReplace(stepCtx(t), id5, bson.D{{Key: "x", Value: 1}}, options.FindOneAndReplace().SetUpsert(true))
		}, nil},
		{"replace-after", func(coll *mongo.Collection) *mongo.SingleResult {
			return coll.FindOneAndReplace(stepCtx(t), id5, bson.D{{Key: "x", Value: 1}}, options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.After))
		}, bson.M{"_id": int32(5), "x": int32(1)}},
		{"pipeline-after", func(coll *mongo.Collection) *mongo.SingleResult {
			pipe := mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}
			return coll.FindOneAndUpdate(stepCtx(t), id5, pipe, options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After))
		}, bson.M{"_id": int32(5), "x": int32(1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			coll := db.Collection("fam_" + tc.name)
			// An unrelated document, so that the collection exists and has
			// something to scan.
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 0}})
			res := tc.run(coll)
			var got bson.M
			err := res.Decode(&got)
			if tc.want == nil {
				if err != mongo.ErrNoDocuments {
					t.Fatalf("upsert returned %v, %v; want no document", got, err)
				}
			} else if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("upsert returned %v, %v; want %v", got, err, tc.want)
			}
			wantX(t, coll, 5, 1)
			// A second run finds the document and updates it.
			if err := tc.run(coll).Err(); err != nil {
				t.Fatalf("second run: %v", err)
			}
			wantIDs(t, coll, bson.D{}, 1, 5)
			dropPromptly(t, coll)
		})
	}
}

func TestTrustUpdateUpsertForms(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	pipe := mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}
	cases := []struct {
		name string
		run  func(coll *mongo.Collection) (*mongo.UpdateResult, error)
	}{
		{"updateOne", func(coll *mongo.Collection) (*mongo.UpdateResult, error) {
			return coll.UpdateOne(stepCtx(t), id5, setX1, options.UpdateOne().SetUpsert(true))
		}},
		{"updateMany", func(coll *mongo.Collection) (*mongo.UpdateResult, error) {
			return coll.UpdateMany(stepCtx(t), id5, setX1, options.UpdateMany().SetUpsert(true))
		}},
		{"replaceOne", func(coll *mongo.Collection) (*mongo.UpdateResult, error) {
			return coll.ReplaceOne(stepCtx(t), id5, bson.D{{Key: "x", Value: 1}}, options.Replace().SetUpsert(true))
		}},
		{"pipeline", func(coll *mongo.Collection) (*mongo.UpdateResult, error) {
			return coll.UpdateOne(stepCtx(t), id5, pipe, options.UpdateOne().SetUpsert(true))
		}},
		{"updateMany-pipeline", func(coll *mongo.Collection) (*mongo.UpdateResult, error) {
			return coll.UpdateMany(stepCtx(t), id5, pipe, options.UpdateMany().SetUpsert(true))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			coll := db.Collection("upd_" + tc.name)
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 0}})
			res, err := tc.run(coll)
			if err != nil || res.UpsertedID != int32(5) || res.MatchedCount != 0 {
				t.Fatalf("upsert: %+v, %v; want upserted _id 5", res, err)
			}
			wantX(t, coll, 5, 1)
			res, err = tc.run(coll)
			if err != nil || res.UpsertedID != nil || res.MatchedCount != 1 {
				t.Fatalf("second upsert: %+v, %v; want one match", res, err)
			}
			wantIDs(t, coll, bson.D{}, 1, 5)
			dropPromptly(t, coll)
		})
	}
}

func TestTrustBulkWriteUpserts(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprint("ordered=", ordered), func(t *testing.T) {
			coll := db.Collection(fmt.Sprint("bulk_", ordered))
			models := []mongo.WriteModel{
				mongo.NewUpdateOneModel().SetFilter(id5).SetUpdate(setX1).SetUpsert(true),
				mongo.NewUpdateOneModel().SetFilter(id5).SetUpdate(bson.D{{Key: "$inc", Value: bson.D{{Key: "x", Value: 1}}}}).SetUpsert(true),
				mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: 6}}).SetReplacement(bson.D{{Key: "x", Value: 1}}).SetUpsert(true),
				mongo.NewUpdateManyModel().SetFilter(bson.D{{Key: "_id", Value: 7}}).SetUpdate(setX1).SetUpsert(true),
				mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 8}, {Key: "x", Value: 1}}),
			}
			res, err := coll.BulkWrite(stepCtx(t), models, options.BulkWrite().SetOrdered(ordered))
			if err != nil {
				t.Fatalf("bulk write: %v", err)
			}
			if res.UpsertedCount != 3 || res.MatchedCount != 1 || res.InsertedCount != 1 {
				t.Fatalf("bulk write: %+v; want 3 upserts, 1 match, 1 insert", res)
			}
			wantX(t, coll, 5, 2)
			wantX(t, coll, 6, 1)
			wantX(t, coll, 7, 1)
			wantIDs(t, coll, bson.D{}, 5, 6, 7, 8)
			dropPromptly(t, coll)
		})
	}
}

// An upsert of the _id whose document just expired inserts a new one: the
// expired document is gone to clients, and still in storage without a reaper.
func TestTrustUpsertExpiredID(t *testing.T) {
	ts := startServer(t, noReaper)
	db := ts.Client.Database("trust")
	runs := map[string]func(coll *mongo.Collection) error{
		"findAndModify": func(coll *mongo.Collection) error {
			var got bson.M
			err := coll.FindOneAndUpdate(stepCtx(t), id5, setX1, options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&got)
			if err == nil && (got["x"] != int32(1) || got["old"] != nil) {
				return fmt.Errorf("returned %v, want the new document", got)
			}
			return err
		},
		"findAndModify-remove-then-upsert": func(coll *mongo.Collection) error {
			if err := coll.FindOneAndDelete(stepCtx(t), id5).Err(); err != mongo.ErrNoDocuments {
				return fmt.Errorf("findAndModify remove of an expired document: %v", err)
			}
			return ignoreNoDocs(coll.FindOneAndReplace(stepCtx(t), id5, bson.D{{Key: "x", Value: 1}}, options.FindOneAndReplace().SetUpsert(true)).Err())
		},
		"update": func(coll *mongo.Collection) error {
			res, err := coll.UpdateOne(stepCtx(t), id5, setX1, options.UpdateOne().SetUpsert(true))
			if err == nil && res.UpsertedID != int32(5) {
				return fmt.Errorf("update: %+v, want upserted 5", res)
			}
			return err
		},
		"replace": func(coll *mongo.Collection) error {
			_, err := coll.ReplaceOne(stepCtx(t), id5, bson.D{{Key: "x", Value: 1}}, options.Replace().SetUpsert(true))
			return err
		},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			coll := db.Collection("exp_" + name)
			enableTTL(t, coll, 10)
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 5}, {Key: "old", Value: true}})
			ts.Clock.Advance(11 * time.Second)
			if err := run(coll); err != nil {
				t.Fatalf("upsert of the expired _id: %v", err)
			}
			var doc bson.M
			if err := coll.FindOne(stepCtx(t), id5).Decode(&doc); err != nil {
				t.Fatalf("find: %v", err)
			}
			if doc["x"] != int32(1) || doc["old"] != nil {
				t.Fatalf("got %v, want the new document", doc)
			}
			dropPromptly(t, coll)
		})
	}
}

// An upsert whose new document collides on a unique index fails with a
// duplicate key error and leaves nothing locked.
func TestTrustUpsertUniqueCollision(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	setA := bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "A"}}}}
	runs := map[string]func(coll *mongo.Collection) error{
		"findAndModify": func(coll *mongo.Collection) error {
			return coll.FindOneAndUpdate(stepCtx(t), id5, setA, options.FindOneAndUpdate().SetUpsert(true)).Err()
		},
		"findAndModify-new": func(coll *mongo.Collection) error {
			return coll.FindOneAndReplace(stepCtx(t), id5, bson.D{{Key: "name", Value: "A"}}, options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.After)).Err()
		},
		"update": func(coll *mongo.Collection) error {
			_, err := coll.UpdateOne(stepCtx(t), id5, setA, options.UpdateOne().SetUpsert(true))
			return err
		},
		"bulk": func(coll *mongo.Collection) error {
			_, err := coll.BulkWrite(stepCtx(t), []mongo.WriteModel{
				mongo.NewUpdateOneModel().SetFilter(id5).SetUpdate(setA).SetUpsert(true),
			})
			return err
		},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			coll := db.Collection("uniq_" + name)
			if _, err := coll.Indexes().CreateOne(stepCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
				t.Fatal(err)
			}
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "A"}})
			wantCode(t, run(coll), 11000)
			wantIDs(t, coll, bson.D{}, 1)
			// Another write to the same _id goes through.
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 5}, {Key: "name", Value: "B"}})
			dropPromptly(t, coll)
		})
	}
}

// Concurrent upserts of one absent _id make one document: one inserts, the
// others update it (MongoDB retries an upsert that fails on a duplicate key
// of its equality query).
func TestTrustConcurrentUpsertsOneDocument(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	const workers, rounds = 8, 20
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	cases := map[string]func(coll *mongo.Collection, id int) error{
		"update": func(coll *mongo.Collection, id int) error {
			_, err := coll.UpdateOne(stepCtx(t), bson.D{{Key: "_id", Value: id}}, inc, options.UpdateOne().SetUpsert(true))
			return err
		},
		"findAndModify": func(coll *mongo.Collection, id int) error {
			return ignoreNoDocs(coll.FindOneAndUpdate(stepCtx(t), bson.D{{Key: "_id", Value: id}}, inc, options.FindOneAndUpdate().SetUpsert(true)).Err())
		},
		// A unique secondary key: no lock is held across the miss, so the
		// losers hit the duplicate key and must retry.
		"unique-key": func(coll *mongo.Collection, id int) error {
			_, err := coll.UpdateOne(stepCtx(t), bson.D{{Key: "k", Value: id}}, inc, options.UpdateOne().SetUpsert(true))
			return err
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			coll := db.Collection("conc_" + name)
			if name != "unique-key" {
				mustInsert(t, coll, bson.D{{Key: "_id", Value: -1}})
			} else if _, err := coll.Indexes().CreateOne(stepCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
				t.Fatal(err)
			}
			for r := 0; r < rounds; r++ {
				var wg sync.WaitGroup
				errs := make(chan error, workers)
				for i := 0; i < workers; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs <- run(coll, r)
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatalf("round %d: %v", r, err)
					}
				}
			}
			cur, err := coll.Find(stepCtx(t), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			var docs []bson.M
			if err := cur.All(stepCtx(t), &docs); err != nil {
				t.Fatal(err)
			}
			if name != "unique-key" {
				docs = docs[1:] // the document that created the collection
			}
			if len(docs) != rounds {
				t.Fatalf("got %d documents, want %d: %v", len(docs), rounds, docs)
			}
			for _, d := range docs {
				if d["n"] != int32(workers) {
					t.Fatalf("document %v: want n %d", d, workers)
				}
			}
			dropPromptly(t, coll)
		})
	}
}

func ignoreNoDocs(err error) error {
	if err == mongo.ErrNoDocuments {
		return nil
	}
	return err
}

// writeErrors returns the write errors of a write that must have failed.
func writeErrors(t *testing.T, err error) []mongo.WriteError {
	t.Helper()
	var we mongo.WriteException
	var bwe mongo.BulkWriteException
	switch {
	case errors.As(err, &we):
		return we.WriteErrors
	case errors.As(err, &bwe):
		out := make([]mongo.WriteError, len(bwe.WriteErrors))
		for i, e := range bwe.WriteErrors {
			out[i] = e.WriteError
		}
		return out
	}
	t.Fatalf("got %v, want write errors", err)
	return nil
}

// wantDupAt fails unless err holds exactly one write error, a duplicate key
// of keyPattern/keyValue at index.
func wantDupAt(t *testing.T, err error, index int, keyPattern, keyValue bson.D) {
	t.Helper()
	wes := writeErrors(t, err)
	if len(wes) != 1 || wes[0].Code != 11000 || wes[0].Index != index {
		t.Fatalf("got write errors %v, want one duplicate key at index %d", wes, index)
	}
	raw := wes[0].Raw
	wantKP, _ := bson.Marshal(keyPattern)
	wantKV, _ := bson.Marshal(keyValue)
	if kp, err := raw.LookupErr("keyPattern"); err != nil || !bytes.Equal(kp.Document(), wantKP) {
		t.Fatalf("write error %v: want keyPattern %v", raw, keyPattern)
	}
	if kv, err := raw.LookupErr("keyValue"); err != nil || !bytes.Equal(kv.Document(), wantKV) {
		t.Fatalf("write error %v: want keyValue %v", raw, keyValue)
	}
}

func uniqueIndex(t *testing.T, coll *mongo.Collection, keys bson.D) {
	t.Helper()
	if _, err := coll.Indexes().CreateOne(stepCtx(t), mongo.IndexModel{Keys: keys, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatalf("create unique index %v: %v", keys, err)
	}
}

// A unique index holds within one batch: the second document of a batch
// that repeats a key fails, the first stands; an ordered batch stops there.
func TestTrustUniqueWithinInsertBatch(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	indexes := map[string]struct {
		keys    bson.D
		doc     func(id int) bson.D
		keyVal  bson.D
		keyPatt bson.D
	}{
		"single": {
			keys:    bson.D{{Key: "name", Value: 1}},
			doc:     func(id int) bson.D { return bson.D{{Key: "_id", Value: id}, {Key: "name", Value: "A"}} },
			keyPatt: bson.D{{Key: "name", Value: int32(1)}},
			keyVal:  bson.D{{Key: "name", Value: "A"}},
		},
		"compound": {
			keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}},
			doc: func(id int) bson.D {
				return bson.D{{Key: "_id", Value: id}, {Key: "b", Value: 2}, {Key: "a", Value: 1}}
			},
			keyPatt: bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(-1)}},
			keyVal:  bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(2)}},
		},
	}
	for name, ix := range indexes {
		for _, ordered := range []bool{true, false} {
			t.Run(fmt.Sprint(name, "/ordered=", ordered), func(t *testing.T) {
				coll := db.Collection(fmt.Sprint("batch_", name, ordered))
				uniqueIndex(t, coll, ix.keys)
				_, err := coll.InsertMany(stepCtx(t), []any{ix.doc(1), ix.doc(2), bson.D{{Key: "_id", Value: 3}}}, options.InsertMany().SetOrdered(ordered))
				wantDupAt(t, err, 1, ix.keyPatt, ix.keyVal)
				if ordered {
					wantIDs(t, coll, bson.D{}, 1)
				} else {
					wantIDs(t, coll, bson.D{}, 1, 3)
				}
				dropPromptly(t, coll)
			})
		}
	}
}

// An update of many documents that makes two collide fails at the second;
// the first stands.
func TestTrustUniqueWithinUpdateMany(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("trust").Collection("updmany")
	uniqueIndex(t, coll, bson.D{{Key: "name", Value: 1}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "A"}}, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "B"}})
	_, err := coll.UpdateMany(stepCtx(t), bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "Z"}}}})
	wantCode(t, err, 11000)
	if n := count(t, coll, bson.D{{Key: "name", Value: "Z"}}); n != 1 {
		t.Fatalf("%d documents named Z, want 1", n)
	}
	dropPromptly(t, coll)
}

// Bulk writes mixing inserts, updates and upserts run in order, each seeing
// the ones before.
func TestTrustUniqueWithinBulkWrite(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("trust")
	name := func(n string) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: n}}}} }
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprint("ordered=", ordered), func(t *testing.T) {
			coll := db.Collection(fmt.Sprint("bulkuniq_", ordered))
			uniqueIndex(t, coll, bson.D{{Key: "name", Value: 1}})
			models := []mongo.WriteModel{
				mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "A"}}),
				mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "B"}}),
				mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 2}}).SetUpdate(name("A")),
				mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 3}}).SetUpdate(name("C")).SetUpsert(true),
				mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: 4}}).SetUpdate(name("C")).SetUpsert(true),
				mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 5}, {Key: "name", Value: "B"}}),
			}
			_, err := coll.BulkWrite(stepCtx(t), models, options.BulkWrite().SetOrdered(ordered))
			wes := writeErrors(t, err)
			var at []int
			for _, we := range wes {
				if we.Code != 11000 {
					t.Fatalf("write error %v, want duplicate keys", we)
				}
				at = append(at, we.Index)
			}
			slices.Sort(at) // an unordered bulk write may group by kind
			if ordered {
				if fmt.Sprint(at) != "[2]" {
					t.Fatalf("duplicate keys at %v, want [2]", at)
				}
				wantIDs(t, coll, bson.D{}, 1, 2)
			} else {
				// 5 collides with 2, which kept name B.
				if fmt.Sprint(at) != "[2 4 5]" {
					t.Fatalf("duplicate keys at %v, want [2 4 5]", at)
				}
				wantIDs(t, coll, bson.D{}, 1, 2, 3)
			}
			dropPromptly(t, coll)
		})
	}
}

// A document with two _id fields is refused on every path that stores a
// whole document.
func TestTrustTwoIDFieldsRefused(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("trust").Collection("twoids")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 0}})
	twoIDs := mustMarshal(t, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}, {Key: "_id", Value: 2}})
	twoIDsNoFirst := mustMarshal(t, bson.D{{Key: "x", Value: 1}, {Key: "_id", Value: 7}, {Key: "_id", Value: 8}})
	db := coll.Database()
	cases := map[string]func() error{
		"insert": func() error {
			_, err := coll.InsertOne(stepCtx(t), twoIDs)
			return err
		},
		"insert-not-first": func() error {
			_, err := coll.InsertOne(stepCtx(t), twoIDsNoFirst)
			return err
		},
		"replace": func() error {
			_, err := coll.ReplaceOne(stepCtx(t), bson.D{{Key: "_id", Value: 1}}, twoIDs)
			return err
		},
		"replace-upsert": func() error {
			_, err := coll.ReplaceOne(stepCtx(t), bson.D{{Key: "x", Value: 5}}, twoIDsNoFirst, options.Replace().SetUpsert(true))
			return err
		},
		"findAndModify-replace": func() error {
			return db.RunCommand(stepCtx(t), bson.D{{Key: "findAndModify", Value: coll.Name()}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "update", Value: twoIDs}}).Err()
		},
		"findAndModify-upsert": func() error {
			return db.RunCommand(stepCtx(t), bson.D{{Key: "findAndModify", Value: coll.Name()}, {Key: "query", Value: bson.D{{Key: "x", Value: 5}}}, {Key: "update", Value: twoIDsNoFirst}, {Key: "upsert", Value: true}}).Err()
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			wantCode(t, run(), 2)
			wantIDs(t, coll, bson.D{}, 1)
			wantX(t, coll, 1, 0)
		})
	}
}

// _id may not be an array, a regex or undefined (InvalidIdField), nor a
// document with a $-prefixed field (DollarPrefixedFieldName), whichever
// write makes the document.
func TestTrustInvalidIDRefused(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("trust").Collection("badids")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}})
	db := coll.Database()
	bad := []struct {
		name string
		id   any
		code int
	}{
		{"array", bson.A{1, 2}, 53},
		{"regex", bson.Regex{Pattern: "a", Options: ""}, 53},
		{"undefined", bson.Undefined{}, 53},
		{"dollar-field", bson.D{{Key: "$a", Value: 1}}, 52},
		{"nested-dollar-field", bson.D{{Key: "a", Value: bson.D{{Key: "$b", Value: 1}}}}, 52},
	}
	for _, b := range bad {
		doc := bson.D{{Key: "_id", Value: b.id}, {Key: "x", Value: 1}}
		writes := map[string]func() error{
			"insert": func() error {
				_, err := coll.InsertOne(stepCtx(t), doc)
				return err
			},
			"replace-upsert": func() error {
				_, err := coll.ReplaceOne(stepCtx(t), bson.D{{Key: "x", Value: 5}}, doc, options.Replace().SetUpsert(true))
				return err
			},
			"findAndModify-replace-upsert": func() error {
				return db.RunCommand(stepCtx(t), bson.D{{Key: "findAndModify", Value: coll.Name()}, {Key: "query", Value: bson.D{{Key: "x", Value: 5}}}, {Key: "update", Value: doc}, {Key: "upsert", Value: true}}).Err()
			},
			"set-upsert": func() error {
				_, err := coll.UpdateOne(stepCtx(t), bson.D{{Key: "x", Value: 5}}, bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: b.id}}}}, options.UpdateOne().SetUpsert(true))
				return err
			},
		}
		for name, run := range writes {
			t.Run(b.name+"/"+name, func(t *testing.T) {
				wantCode(t, run(), b.code)
				wantIDs(t, coll, bson.D{}, 1)
			})
		}
	}
}

// A cursor ends with QueryPlanKilled when its collection is dropped or
// renamed, or the index it scans is dropped, between batches.
func TestTrustCursorKilledByDrop(t *testing.T) {
	ts := startServer(t)
	client := ts.Client
	cases := []struct {
		name  string
		opts  *options.FindOptionsBuilder
		event func(t *testing.T, coll *mongo.Collection)
		msg   string // part of the error message; "" for no error
	}{
		{"drop", nil, func(t *testing.T, coll *mongo.Collection) { dropPromptly(t, coll) }, "collection dropped"},
		{"drop-sorted", options.Find().SetSort(bson.D{{Key: "y", Value: 1}}), func(t *testing.T, coll *mongo.Collection) { dropPromptly(t, coll) }, "collection dropped"},
		{"drop-recreate", nil, func(t *testing.T, coll *mongo.Collection) {
			dropPromptly(t, coll)
			mustInsert(t, coll, bson.D{{Key: "_id", Value: 100}})
		}, "collection dropped"},
		{"dropDatabase", nil, func(t *testing.T, coll *mongo.Collection) {
			if err := coll.Database().Drop(stepCtx(t)); err != nil {
				t.Fatal(err)
			}
		}, "collection dropped"},
		{"rename", nil, func(t *testing.T, coll *mongo.Collection) {
			run(t, client.Database("admin"), bson.D{{Key: "renameCollection", Value: "killed.rename"}, {Key: "to", Value: "killed.renamed"}})
		}, "collection renamed"},
		{"drop-hinted-index", options.Find().SetHint("x_1"), func(t *testing.T, coll *mongo.Collection) {
			if err := coll.Indexes().DropOne(stepCtx(t), "x_1"); err != nil {
				t.Fatal(err)
			}
		}, "index 'x_1' dropped"},
		{"drop-other-index", nil, func(t *testing.T, coll *mongo.Collection) {
			if err := coll.Indexes().DropOne(stepCtx(t), "x_1"); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			coll := client.Database("killed").Collection(tc.name)
			var docs []any
			for i := 0; i < 10; i++ {
				docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "x", Value: i}, {Key: "y", Value: -i}})
			}
			mustInsert(t, coll, docs...)
			if _, err := coll.Indexes().CreateOne(stepCtx(t), mongo.IndexModel{Keys: bson.D{{Key: "x", Value: 1}}}); err != nil {
				t.Fatal(err)
			}
			opts := tc.opts
			if opts == nil {
				opts = options.Find()
			}
			cur, err := coll.Find(stepCtx(t), bson.D{}, opts.SetBatchSize(2))
			if err != nil {
				t.Fatal(err)
			}
			defer cur.Close(context.Background())
			for i := 0; i < 2; i++ {
				if !cur.Next(stepCtx(t)) {
					t.Fatalf("first batch: %v", cur.Err())
				}
			}
			tc.event(t, coll)
			n := 0
			for cur.Next(stepCtx(t)) {
				n++
			}
			err = cur.Err()
			if tc.msg == "" {
				if err != nil || n != 8 {
					t.Fatalf("after the event: %d more documents, %v; want 8, no error", n, err)
				}
				return
			}
			wantCode(t, err, 175)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v does not say %q", err, tc.msg)
			}
		})
	}
}

// A batch that reuses the unique key of an expired document: the first
// document takes the key over (the expired one is gone to clients), the
// second collides with the first.
func TestTrustUniqueBatchOverExpiredHolder(t *testing.T) {
	ts := startServer(t, noReaper)
	coll := ts.Client.Database("trust").Collection("expiredholder")
	enableTTL(t, coll, 10)
	uniqueIndex(t, coll, bson.D{{Key: "k", Value: 1}})
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 0}, {Key: "k", Value: 1}})
	ts.Clock.Advance(11 * time.Second)
	_, err := coll.InsertMany(stepCtx(t), []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 1}},
	}, options.InsertMany().SetOrdered(false))
	wantDupAt(t, err, 1, bson.D{{Key: "k", Value: int32(1)}}, bson.D{{Key: "k", Value: int32(1)}})
	wantIDs(t, coll, bson.D{}, 1)
	// The upsert of a key whose holder expired inserts, and the next one
	// updates what it inserted.
	ts.Clock.Advance(11 * time.Second)
	for i := 0; i < 2; i++ {
		if _, err := coll.UpdateOne(stepCtx(t), bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetUpsert(true)); err != nil {
			t.Fatalf("upsert %d: %v", i, err)
		}
	}
	if n := count(t, coll, bson.D{{Key: "k", Value: 1}, {Key: "n", Value: 2}}); n != 1 {
		t.Fatalf("%d documents with k 1 and n 2, want 1", n)
	}
	dropPromptly(t, coll)
}
