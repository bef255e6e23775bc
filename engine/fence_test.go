package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/update"
)

// The tests of fences (fence.go): a catalog change through one server and
// the writes through another are ordered as mongod orders them with the
// collection's exclusive lock (collMod takes it: AutoGetCollection with
// MODE_X in _collModInternal, src/mongo/db/catalog/coll_mod.cpp), each
// write wholly before or after the change in the oplog. The oplog replica of the model (model_oplog_test.go)
// is the judge: it applies the entries in order and must end with the
// stored documents, and while changeStreamPreAndPostImages is on (by the
// create and collMod entries) every update and delete must carry the
// pre-image the replica had, and none while it is off.

// hammer runs write on b in workers goroutines until change has run rounds
// times on a, then checks the oplog against the store.
func hammer(t *testing.T, rounds, workers int, write func(ctx context.Context, b *Engine, w, i int) error, change func(ctx context.Context, a *Engine, round int) error, colls ...string) {
	t.Helper()
	ctx := context.Background()
	es := sharedEngines(t, 2, Options{NoReaper: true, Oplog: true})
	a, b := es[0], es[1]
	for _, coll := range colls {
		if err := a.CreateCollection(ctx, "db", coll, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var failed atomic.Value
	var writes atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if err := write(ctx, b, w, i); err != nil {
					failed.Store(fmt.Errorf("write %d of worker %d: %w", i, w, err))
					return
				}
				writes.Add(1)
			}
		}()
	}
	for r := range rounds {
		if err := change(ctx, a, r); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("round %d: %v", r, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	if writes.Load() < int64(rounds) {
		t.Fatalf("only %d writes beside %d changes: the test did not interleave them", writes.Load(), rounds)
	}
	rep := newOplogReplica()
	if err := rep.catchUp(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	for _, coll := range colls {
		if err := rep.check(a, "db", coll); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFenceOrdersPreImagesAcrossServers: pre-images turned on and off
// through one server while another updates and deletes. Without the fence
// an update that server began under the old setting committed after the
// collMod entry, with no pre-image though the replica expects one.
func TestFenceOrdersPreImagesAcrossServers(t *testing.T) {
	inc, err := update.Compile(modelRaw(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}), update.Options{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(ctx context.Context, b *Engine, w, i int) error {
		id := w*10 + i%10
		if i%7 == 6 {
			_, err := b.Delete(ctx, "db", "c", modelRaw(bson.D{{Key: "_id", Value: id}}), 1, bson.RawValue{})
			return err
		}
		_, err := b.Update(ctx, "db", "c", UpdateSpec{Filter: modelRaw(bson.D{{Key: "_id", Value: id}}), Update: inc, Upsert: true})
		return err
	}
	change := func(ctx context.Context, a *Engine, r int) error {
		return a.SetPreAndPostImages(ctx, "db", "c", r%2 == 0)
	}
	hammer(t, 12, 3, write, change, "c")
}

// TestFenceOrdersDropsAcrossServers: a collection dropped through one
// server while another inserts into it: each insert the second
// acknowledges is in the oplog before the drop (and gone with it) or
// after (in the collection created anew), never stored in the dropped
// collection's keys after its drop entry.
func TestFenceOrdersDropsAcrossServers(t *testing.T) {
	write := func(ctx context.Context, b *Engine, w, i int) error {
		doc := modelRaw(bson.D{{Key: "_id", Value: fmt.Sprintf("w%d-%d", w, i)}})
		res, err := b.Insert(ctx, "db", "d", []bson.Raw{doc}, true)
		if err == nil && len(res.Errors) > 0 {
			err = res.Errors[0].Err
		}
		return err
	}
	change := func(ctx context.Context, a *Engine, r int) error {
		// Let some inserts land between the drops.
		time.Sleep(20 * time.Millisecond)
		_, err := a.DropCollection(ctx, "db", "d")
		return err
	}
	hammer(t, 8, 3, write, change, "d")
}

// TestFenceOfDeadServerIsTakenDown: a server that dies with a collection
// fenced holds its writes off only until its lease runs out; then another
// server takes the fence down and the writes go on.
func TestFenceOfDeadServerIsTakenDown(t *testing.T) {
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	es := sharedEngines(t, 2, Options{NoReaper: true, Cluster: ClusterOptions{Lease: lease}})
	a, b := es[0], es[1]
	if err := a.CreateCollection(ctx, "db", "c", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// a fences c for a change, then dies before making it.
	h, err := a.lockForChange(ctx, a.collection("db", "c"))
	if err != nil {
		t.Fatal(err)
	}
	h.release() // not unlock, which would take the fence down
	a.Halt()
	if st := b.collection("db", "c").st(); st.meta.Fence == "" {
		t.Fatal("the fence is not installed on the other server")
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 20*lease)
	defer cancel()
	res, err := b.Insert(wctx, "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}})}, true)
	if err != nil || res.N != 1 {
		t.Fatalf("insert after the fence's server died: n=%d %v (after %v)", res.N, err, time.Since(start))
	}
	if waited := time.Since(start); waited > 10*lease {
		t.Fatalf("the insert waited %v for a dead server's fence, lease %v", waited, lease)
	}
}

// TestFenceOfNoChangeIsTakenDown: a fence this server's change left behind
// without running any more (given up halfway) holds writes off only until
// the server's own look for orphans takes it down.
func TestFenceOfNoChangeIsTakenDown(t *testing.T) {
	ctx := context.Background()
	a := sharedEngines(t, 1, Options{NoReaper: true})[0]
	if err := a.CreateCollection(ctx, "db", "c", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := a.lockForChange(ctx, a.collection("db", "c"))
	if err != nil {
		t.Fatal(err)
	}
	// The change ends without taking its fence down.
	h.release()
	a.cluster.running.Delete(h.token)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := a.Insert(wctx, "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}})}, true)
	if err != nil || res.N != 1 {
		t.Fatalf("insert beside an abandoned fence: n=%d %v", res.N, err)
	}
}
