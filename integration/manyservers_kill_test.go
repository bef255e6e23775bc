package integration

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// testManyServersKillMidLoad: writers on all three servers upsert into
// one key space; server 2 stops renewing its lease and running its
// background work mid-load, as a killed process would (Server.Halt), and
// its client stops. No write any server acknowledged is lost, the others'
// writes to the documents server 2 was writing go through (no lock is left
// stuck), and server 2 refuses writes once its lease has run out, with an
// error drivers retry elsewhere.
func testManyServersKillMidLoad(t *testing.T) {
	s := startCluster(t, 3)
	ctx := testCtx(t)
	coll := func(i int) *mongo.Collection { return s[i].Client.Database("app").Collection("load") }
	if err := s[0].Client.Database("app").CreateCollection(ctx, "load"); err != nil {
		t.Fatal(err)
	}
	var acked sync.Map // _id -> the n last acknowledged for it, per server
	var stop [3]atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	var werr error
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; !stop[w].Load(); n++ {
				id := fmt.Sprintf("k%d", n%50)
				_, err := coll(w).UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$push", Value: bson.D{{Key: "by", Value: fmt.Sprintf("%d-%d", w, n)}}}}, options.UpdateOne().SetUpsert(true))
				if err != nil {
					if w == 2 && stop[2].Load() {
						return
					}
					mu.Lock()
					werr = errors.Join(werr, fmt.Errorf("server %d: %w", w, err))
					mu.Unlock()
					return
				}
				acked.Store(fmt.Sprintf("%d-%d", w, n), id)
			}
		}(w)
	}
	time.Sleep(300 * time.Millisecond) // mid-load (not a TTL wait)
	s[2].Srv.Halt()
	stop[2].Store(true)
	// The others go on past server 2's lease, on the same documents.
	time.Sleep(testLease + 500*time.Millisecond)
	stop[0].Store(true)
	stop[1].Store(true)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	// Every acknowledged push is in its document, read through server 0.
	cur, err := coll(0).Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string   `bson:"_id"`
		By []string `bson:"by"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, d := range docs {
		for _, b := range d.By {
			if _, dup := have[b]; dup {
				t.Fatalf("push %s is in the store twice", b)
			}
			have[b] = d.ID
		}
	}
	n, lost := 0, 0
	acked.Range(func(k, v any) bool {
		n++
		if have[k.(string)] != v.(string) {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged push %s into %s is not there", k, v)
			}
		}
		return true
	})
	if n == 0 || lost > 0 {
		t.Fatalf("%d of %d acknowledged pushes lost", lost, n)
	}
	// Server 2, cut off, takes no more writes, with an error drivers
	// retry on another server (this client, connected to it alone, does
	// not retry: it would only meet the same answer). NotWritablePrimary
	// (10107) and ShutdownInProgress (91) are both among the retryable
	// errors of the drivers' Retryable Writes specification ("Determining
	// Retryable Errors").
	nr := s[2].NewClient(t, options.Client().SetRetryWrites(false))
	_, err = nr.Database("app").Collection("load").InsertOne(ctx, bson.D{{Key: "_id", Value: "late"}})
	var se mongo.ServerError
	if !errors.As(err, &se) || !(se.HasErrorCode(10107) || se.HasErrorCode(91)) {
		t.Fatalf("a write through the server whose lease ran out: %v, want NotWritablePrimary or ShutdownInProgress", err)
	}
	t.Logf("%d acknowledged pushes, none lost", n)
}
