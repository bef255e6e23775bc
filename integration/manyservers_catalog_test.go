package integration

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testManyServersCatalog: a collection created through one server is the
// same collection on the others; a unique index created through one is
// enforced and used by the others as soon as createIndexes has answered;
// a collection dropped through one is gone on all, and writes after the
// drop create a new one.
func testManyServersCatalog(t *testing.T) {
	s := startCluster(t, 3)
	colls := make([]*mongo.Collection, 3)
	for i, ts := range s {
		colls[i] = ts.Client.Database("app").Collection("users")
	}
	ctx := testCtx(t)
	mustInsert(t, colls[0], bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "a@x"}})
	mustInsert(t, colls[1], bson.D{{Key: "_id", Value: 2}, {Key: "email", Value: "b@x"}})
	if n := count(t, colls[2], bson.D{}); n != 2 {
		t.Fatalf("server 2 counts %d documents, want the 2 written through servers 0 and 1", n)
	}
	if _, err := colls[1].InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("insert through server 1 of the _id inserted through server 0: %v, want E11000", err)
	}
	if _, err := colls[0].Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	// Enforced and listed on the others once createIndexes answered.
	if _, err := colls[2].InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "email", Value: "a@x"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("insert through server 2 of an email taken: %v, want E11000 from the index built through server 0", err)
	}
	for i, c := range colls {
		specs, err := c.Indexes().ListSpecifications(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) != 2 || specs[1].Name != "email_1" {
			t.Fatalf("server %d lists indexes %v, want _id_ and email_1", i, specs)
		}
		var plan bson.M
		if err := c.Database().RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "email", Value: "b@x"}}}}}}).Decode(&plan); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(plan["queryPlanner"]); !strings.Contains(got, "IXSCAN") || !strings.Contains(got, "email_1") {
			t.Fatalf("server %d plans a find by email as %s, want an IXSCAN of email_1", i, got)
		}
	}
	if err := colls[1].Drop(ctx); err != nil {
		t.Fatal(err)
	}
	for i, ts := range s {
		names, err := ts.Client.Database("app").ListCollectionNames(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 0 {
			t.Fatalf("server %d lists %v after the drop through server 1", i, names)
		}
		if n := count(t, colls[i], bson.D{}); n != 0 {
			t.Fatalf("server %d counts %d documents after the drop", i, n)
		}
	}
	// A view created through one server reads through the others, and is
	// gone from all once dropped through another.
	if err := s[0].Client.Database("app").CreateView(ctx, "people", "users", mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "email", Value: "a@x"}}}}}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, colls[0], bson.D{{Key: "_id", Value: 9}, {Key: "email", Value: "a@x"}})
	if n := count(t, s[1].Client.Database("app").Collection("people"), bson.D{}); n != 1 {
		t.Fatalf("server 1 counts %d documents in the view made through server 0, want 1", n)
	}
	if err := s[2].Client.Database("app").Collection("people").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if names, err := s[1].Client.Database("app").ListCollectionNames(ctx, bson.D{{Key: "name", Value: "people"}}); err != nil || len(names) != 0 {
		t.Fatalf("server 1 lists %v (%v) after the view's drop through server 2", names, err)
	}
	if err := colls[0].Drop(ctx); err != nil {
		t.Fatal(err)
	}
	// A write after the drop makes a new collection, without the index.
	mustInsert(t, colls[2], bson.D{{Key: "_id", Value: 1}, {Key: "email", Value: "a@x"}})
	mustInsert(t, colls[0], bson.D{{Key: "_id", Value: 4}, {Key: "email", Value: "a@x"}})
	for i, c := range colls {
		if n := count(t, c, bson.D{}); n != 2 {
			t.Fatalf("server %d counts %d documents in the new collection, want 2", i, n)
		}
	}
}

// testManyServersIndexBuild: an index built through server 0 on a
// populated collection while servers 1 and 2 insert, update and delete
// its documents ends up with exactly the entries of the documents: a find
// through the index on every server returns what a collection scan does.
func testManyServersIndexBuild(t *testing.T) {
	s := startCluster(t, 3)
	ctx := testCtx(t)
	coll := func(i int) *mongo.Collection { return s[i].Client.Database("app").Collection("items") }
	var seed []any
	for i := 0; i < 3000; i++ {
		seed = append(seed, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 50}})
	}
	if _, err := coll(0).InsertMany(ctx, seed); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var werr error
	for w := 1; w <= 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := rng.Intn(4000)
				var err error
				switch rng.Intn(3) {
				case 0:
					_, err = coll(w).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: rng.Intn(50)}}}}, options.UpdateOne().SetUpsert(true))
				case 1:
					_, err = coll(w).DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
				default:
					_, err = coll(w).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: bson.A{rng.Intn(50), rng.Intn(50)}}}}})
				}
				if err != nil && !mongo.IsDuplicateKeyError(err) {
					mu.Lock()
					werr = errors.Join(werr, fmt.Errorf("writer %d: %w", w, err))
					mu.Unlock()
					return
				}
			}
		}(w)
	}
	time.Sleep(100 * time.Millisecond) // let the writers get going (not a TTL wait)
	_, err := coll(0).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}})
	time.Sleep(100 * time.Millisecond) // and write on the built index
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	for i := range s {
		for k := 0; k < 50; k++ {
			ids := func(hint any) []int32 {
				cur, err := coll(i).Find(ctx, bson.D{{Key: "k", Value: k}}, options.Find().SetHint(hint).SetSort(bson.D{{Key: "_id", Value: 1}}).SetProjection(bson.D{{Key: "_id", Value: 1}}))
				if err != nil {
					t.Fatal(err)
				}
				var docs []struct {
					ID int32 `bson:"_id"`
				}
				if err := cur.All(ctx, &docs); err != nil {
					t.Fatal(err)
				}
				out := make([]int32, len(docs))
				for j, d := range docs {
					out[j] = d.ID
				}
				return out
			}
			byIndex, byScan := ids("k_1"), ids(bson.D{{Key: "$natural", Value: 1}})
			if fmt.Sprint(byIndex) != fmt.Sprint(byScan) {
				t.Fatalf("server %d, k=%d: the index finds %v, a collection scan %v", i, k, byIndex, byScan)
			}
		}
	}
}

// testManyServersConcurrentUnique: clients on all three servers insert at
// once documents that contend for the values of a unique index and for
// _ids: each value ends up in exactly one document, every insert that was
// acknowledged is there, and every one refused was refused as a duplicate.
func testManyServersConcurrentUnique(t *testing.T) {
	s := startCluster(t, 3)
	ctx := testCtx(t)
	coll := func(i int) *mongo.Collection { return s[i].Client.Database("app").Collection("accounts") }
	if _, err := coll(0).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "login", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	var acked sync.Map // _id -> login
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; i < 150; i++ {
				id := rng.Intn(200)
				login := fmt.Sprintf("user%d", rng.Intn(60))
				_, err := coll(w).InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "login", Value: login}})
				switch {
				case err == nil:
					acked.Store(id, login)
				case !mongo.IsDuplicateKeyError(err):
					errs <- fmt.Errorf("server %d: %w", w, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cur, err := coll(1).Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID    int    `bson:"_id"`
		Login string `bson:"login"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	logins := map[string]int{}
	stored := map[int]string{}
	for _, d := range docs {
		if other, dup := logins[d.Login]; dup {
			t.Fatalf("login %s is in documents %d and %d", d.Login, other, d.ID)
		}
		logins[d.Login] = d.ID
		stored[d.ID] = d.Login
	}
	n := 0
	acked.Range(func(k, v any) bool {
		n++
		if stored[k.(int)] != v.(string) {
			t.Errorf("acknowledged insert of %v with login %v is not stored as such (%q)", k, v, stored[k.(int)])
		}
		return true
	})
	if n != len(docs) {
		t.Fatalf("%d inserts acknowledged, %d documents stored", n, len(docs))
	}
}
