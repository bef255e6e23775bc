package integration

import (
	"context"
	"fmt"
	"reflect"
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
