package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// csEvent is what the tests of streams across servers compare of an event.
type csEvent struct {
	op, id string
	ts     bson.Timestamp
	token  bson.Raw
}

func (e csEvent) String() string { return fmt.Sprintf("%s %s at %v", e.op, e.id, e.ts) }

// readEvents reads n events from cs, failing the test if they do not all
// come within a bounded time.
func readEvents(t *testing.T, cs *mongo.ChangeStream, n int) []csEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []csEvent
	for len(out) < n {
		if !cs.Next(ctx) {
			t.Fatalf("%d events of %d, then: %v", len(out), n, cs.Err())
		}
		ev := cs.Current
		tt, ti := ev.Lookup("clusterTime").Timestamp()
		id := ev.Lookup("documentKey", "_id")
		out = append(out, csEvent{op: ev.Lookup("operationType").StringValue(), id: id.StringValue(),
			ts: bson.Timestamp{T: tt, I: ti}, token: append(bson.Raw(nil), ev.Lookup("_id").Document()...)})
	}
	return out
}

// noMoreEvents checks that cs has no event within a short wait: the
// streams have caught up with every server, so a repeat would be there.
func noMoreEvents(t *testing.T, cs *mongo.ChangeStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if cs.Next(ctx) {
		t.Fatalf("unexpected event %s", cs.Current)
	}
}

// checkOrdered checks that events come in strictly increasing cluster
// time: the order of their commits across servers, each once.
func checkOrdered(t *testing.T, evs []csEvent) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if !evs[i-1].ts.Before(evs[i].ts) {
			t.Fatalf("event %d (%v) not after event %d (%v)", i, evs[i], i-1, evs[i-1])
		}
	}
}

// testManyServersChangeStreamOrder: a stream opened on one server sees the
// writes made through all three, once each, in commit order. Writes made
// one after another through different servers come in that order (each
// takes its timestamp from the store's oracle after the one before was
// acknowledged), and concurrent ones each once, in increasing cluster
// time, every document's insert, update and delete in that order. MongoDB
// orders a sharded cluster's events by cluster time and merges the shards'
// streams by it (jstests/sharding/change_stream_enforce_max_time_ms_on_mongos.js,
// db/pipeline/document_source_change_stream_handle_topology_change.cpp).
func testManyServersChangeStreamOrder(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := testCtx(t)
	colls := make([]*mongo.Collection, len(servers))
	for i, s := range servers {
		colls[i] = s.Client.Database("cs").Collection("c")
	}
	mustInsert(t, colls[0], bson.D{{Key: "_id", Value: "before"}})
	cs := watchColl(t, colls[0], nil)

	// One after another, round robin: the stream's order is this order.
	var want []string
	for r := 0; r < 4; r++ {
		for i := range servers {
			id := fmt.Sprintf("seq-%d-%d", r, i)
			mustInsert(t, colls[i], bson.D{{Key: "_id", Value: id}, {Key: "server", Value: i}})
			want = append(want, id)
		}
	}
	got := readEvents(t, cs, len(want))
	checkOrdered(t, got)
	for i, ev := range got {
		if ev.op != "insert" || ev.id != want[i] {
			t.Fatalf("event %d is %v, want the insert of %s (the write acknowledged before it was %s)", i, ev, want[i], want[max(i-1, 0)])
		}
	}

	// Concurrently: each server inserts, updates and deletes its own
	// documents.
	const perServer = 20
	var wg sync.WaitGroup
	errs := make(chan error, len(servers))
	for i := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < perServer; k++ {
				id := fmt.Sprintf("con-%d-%d", i, k)
				if _, err := colls[i].InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
					errs <- err
					return
				}
				if _, err := colls[i].UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: k}}}}); err != nil {
					errs <- err
					return
				}
				if k%2 == 0 {
					if _, err := colls[i].DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := len(servers) * (perServer*2 + perServer/2)
	got = readEvents(t, cs, n)
	checkOrdered(t, got)
	seen := map[string]bool{}
	next := map[string]string{} // the op each document's next event must be
	for _, ev := range got {
		key := ev.op + " " + ev.id
		if seen[key] {
			t.Fatalf("%v twice", ev)
		}
		seen[key] = true
		want := next[ev.id]
		if want == "" {
			want = "insert"
		}
		if ev.op != want {
			t.Fatalf("%v, want %s of %s next", ev, want, ev.id)
		}
		next[ev.id] = map[string]string{"insert": "update", "update": "delete", "delete": "none"}[ev.op]
	}
	if len(seen) != n {
		t.Fatalf("%d distinct events, want %d", len(seen), n)
	}
	noMoreEvents(t, cs)

	// The other servers' streams, opened at the start, agree.
	for i := 1; i < len(servers); i++ {
		other := watchColl(t, colls[i], nil, options.ChangeStream().SetResumeAfter(got[0].token))
		rest := readEvents(t, other, len(got)-1)
		for j, ev := range rest {
			if ev.op != got[j+1].op || ev.id != got[j+1].id || ev.ts != got[j+1].ts {
				t.Fatalf("server %d's stream: event %d is %v, server 0's %v", i, j+1, ev, got[j+1])
			}
		}
	}
}

// testManyServersChangeStreamResume: a stream opened on one server and
// resumed on another with the token of an event it handed out continues
// right after that event, while all three write: nothing missed, nothing
// twice. Tokens name positions in the one oplog, by cluster time, so any
// server resumes them, as any mongos resumes a token of another
// (jstests/sharding/resume_change_stream.js).
func testManyServersChangeStreamResume(t *testing.T) {
	servers := startCluster(t, 3)
	ctx := testCtx(t)
	colls := make([]*mongo.Collection, len(servers))
	for i, s := range servers {
		colls[i] = s.Client.Database("cs").Collection("r")
	}
	for i := range servers {
		// One at a time: the first creates the collection.
		mustInsert(t, colls[i], bson.D{{Key: "_id", Value: fmt.Sprintf("before-%d", i)}})
	}
	csA := watchColl(t, colls[0], nil)

	// Writers on all three run while the stream moves from A to B.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]bool{}
	errs := make(chan error, len(servers))
	for i := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w-%d-%d", i, k)
				if _, err := colls[i].InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				written[id] = true
				mu.Unlock()
			}
		}()
	}
	first := readEvents(t, csA, 30)
	csA.Close(ctx)
	// Resume on B from the last event A handed out.
	csB := watchColl(t, colls[1], nil, options.ChangeStream().SetResumeAfter(first[len(first)-1].token))
	second := readEvents(t, csB, 30)
	// And on C from B's postBatchResumeToken, which may name no event.
	tok := csB.ResumeToken()
	csB.Close(ctx)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	csC := watchColl(t, colls[2], nil, options.ChangeStream().SetResumeAfter(tok))

	all := append(first, second...)
	mu.Lock()
	total := len(written)
	mu.Unlock()
	all = append(all, readEvents(t, csC, total-len(all))...)
	checkOrdered(t, all)
	seen := map[string]bool{}
	for _, ev := range all {
		if ev.op != "insert" || seen[ev.id] || !written[ev.id] {
			t.Fatalf("%v: not one insert of a written document (seen before: %v)", ev, seen[ev.id])
		}
		seen[ev.id] = true
	}
	noMoreEvents(t, csC)
}

// testManyServersChangeStreamTTL: a document that expires is purged once,
// and every server's stream reports one delete of it, at one cluster
// time; with showExpireEvents each also reports its expiry once, before
// that delete. MongoDB's TTL deletes are ordinary deletes in the oplog
// (db/ttl.cpp), so their change events are delete events.
func testManyServersChangeStreamTTL(t *testing.T) {
	servers := startCluster(t, 3)
	colls := make([]*mongo.Collection, len(servers))
	for i, s := range servers {
		colls[i] = s.Client.Database("cs").Collection("ttl")
	}
	enableTTL(t, colls[0], 100)
	mustInsert(t, colls[0], bson.D{{Key: "_id", Value: "keep"}})
	for i := range servers {
		// Through the server that built the TTL index: making it known to
		// the others is the catalog's part of issue 22.
		mustInsert(t, colls[0], bson.D{{Key: "_id", Value: fmt.Sprintf("exp-%d", i)}, {Key: "ttl", Value: 5 + i}})
	}
	var plain, expiring []*mongo.ChangeStream
	for i := range servers {
		plain = append(plain, watchColl(t, colls[i], nil))
		expiring = append(expiring, watchColl(t, colls[i], nil, expireEvents()))
	}
	servers[0].Clock.Advance(10 * time.Second)
	var first []csEvent
	for i := range servers {
		got := readEvents(t, plain[i], len(servers))
		checkOrdered(t, got)
		for j, ev := range got {
			if ev.op != "delete" || ev.id != fmt.Sprintf("exp-%d", j) {
				t.Fatalf("server %d: event %d is %v, want the delete of exp-%d", i, j, ev, j)
			}
		}
		if first == nil {
			first = got
		}
		for j := range got {
			if got[j].ts != first[j].ts {
				t.Fatalf("server %d saw %v, server 0 %v", i, got[j], first[j])
			}
		}
		noMoreEvents(t, plain[i])

		exp := readEvents(t, expiring[i], 2*len(servers))
		for j := range servers {
			id := fmt.Sprintf("exp-%d", j)
			if e, d := exp[2*j], exp[2*j+1]; e.op != "expire" || e.id != id || d.op != "delete" || d.id != id || d.ts != first[j].ts {
				t.Fatalf("server %d: events %v, %v; want the expiry of %s, then its delete at %v", i, e, d, id, first[j].ts)
			}
		}
		noMoreEvents(t, expiring[i])
	}
	if n := count(t, colls[0], bson.D{}); n != 1 {
		t.Fatalf("%d documents left, want 1", n)
	}
}
