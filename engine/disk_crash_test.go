package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/update"
)

// crashWriters is how many goroutines write in each round; writer w owns
// the _ids congruent to w modulo crashWriters, so each id's history is
// sequential and its expected state known.
const crashWriters = 4

// crashOp is the one write a crash writer has in flight: the document's
// state before and after (-1: absent; else the value of v).
type crashOp struct {
	id            int32
	before, after int
}

// crashWriter inserts, updates and deletes its own documents, recording
// each acknowledged result.
type crashWriter struct {
	mu       sync.Mutex
	acked    map[int32]int // id -> v of every document acknowledged present
	inFlight *crashOp
	nextID   int32
	ops      int
}

func (w *crashWriter) run(e *Engine, rng *rand.Rand, stop <-chan struct{}, up *update.Update) {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		w.mu.Lock()
		op := &crashOp{before: -1}
		var present []int32
		if len(w.acked) > 0 && rng.IntN(3) > 0 {
			for id := range w.acked {
				present = append(present, id)
				if len(present) == 8 {
					break
				}
			}
		}
		if len(present) == 0 {
			op.id, op.after = w.nextID, 0
			w.nextID += crashWriters
		} else {
			op.id = present[rng.IntN(len(present))]
			op.before = w.acked[op.id]
			op.after = op.before + 1
			if rng.IntN(3) == 0 {
				op.after = -1
			}
		}
		w.inFlight = op
		w.mu.Unlock()

		var err error
		filter, _ := bson.Marshal(bson.D{{Key: "_id", Value: op.id}})
		switch {
		case op.before == -1:
			var res InsertResult
			res, err = e.Insert(context.Background(), "test", "c", []bson.Raw{crashDoc(op.id, 0)}, true)
			err = insertErr(res, err)
			if err == nil && res.N != 1 {
				panic("insert of a fresh _id not acknowledged without an error")
			}
		case op.after == -1:
			_, err = e.Delete(ctx, "test", "c", filter, 1, bson.RawValue{})
		default:
			_, err = e.Update(ctx, "test", "c", UpdateSpec{Filter: filter, Update: up})
		}
		if err != nil {
			return // not acknowledged: the op stays in flight
		}
		w.mu.Lock()
		if op.after == -1 {
			delete(w.acked, op.id)
		} else {
			w.acked[op.id] = op.after
		}
		w.inFlight = nil
		w.ops++
		w.mu.Unlock()
	}
}

// crashDoc is document id at version v, with a secondary and a unique key
// that follow v, so that updates move index entries.
func crashDoc(id int32, v int) bson.Raw {
	raw, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "v", Value: v}, {Key: "g", Value: v % 7}, {Key: "u", Value: int64(id)<<20 | int64(v)}, {Key: "pad", Value: make([]byte, 200)}})
	return raw
}

// TestCrashWithDiskFaults runs writers against a store on a simulated disk
// that fails writes and syncs at random, crashes the disk (keeping what was
// synced and a random part of the rest) when a fault kills the store or at
// a random moment, restarts from it and checks that every acknowledged
// write is there, no write that was never attempted is, and the collection
// validates. LETHE_CRASH_TEST_DURATION (a Go duration) runs it longer than
// its default 12 s.
func TestCrashWithDiskFaults(t *testing.T) {
	dur := 12 * time.Second
	if testing.Short() {
		dur = 2 * time.Second
	}
	if s := os.Getenv("LETHE_CRASH_TEST_DURATION"); s != "" {
		var err error
		if dur, err = time.ParseDuration(s); err != nil {
			t.Fatalf("LETHE_CRASH_TEST_DURATION: %v", err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	setOp, _ := bson.Marshal(bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}, {Key: "u", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "g", Value: -1}}}})
	up, err := update.Compile(setOp, update.Options{})
	if err != nil {
		t.Fatal(err)
	}

	disk := pebblekv.NewMemDisk(1 << 40)
	open := func() *Engine {
		e, err := Open("/db", Options{
			Clock:       clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			Logger:      zap.NewNop(),
			NoReaper:    true,
			MinFreeDisk: 1 << 20, // a 256 KiB memtable: flushes and compactions run often
			Disk:        disk,
			Oplog:       true,
		})
		if err != nil {
			t.Fatalf("open after a crash: %v", err)
		}
		return e
	}
	e := open()
	for _, spec := range []bson.D{
		{{Key: "key", Value: bson.D{{Key: "g", Value: 1}}}, {Key: "name", Value: "g"}},
		{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u"}, {Key: "unique", Value: true}},
	} {
		raw, _ := bson.Marshal(spec)
		if _, err := e.CreateIndexes(context.Background(), "test", "c", []bson.Raw{raw}); err != nil {
			t.Fatal(err)
		}
	}

	truth := map[int32]int{} // the store's contents after the last restart
	var nextIDs [crashWriters]int32
	for w := range nextIDs {
		nextIDs[w] = int32(w)
	}
	var rounds, fatal, acked, inFlight, faults int
	for end := time.Now().Add(dur); time.Now().Before(end); rounds++ {
		writers := make([]*crashWriter, crashWriters)
		for w := range writers {
			writers[w] = &crashWriter{acked: map[int32]int{}, nextID: nextIDs[w]}
		}
		for id, v := range truth {
			writers[int(id)%crashWriters].acked[id] = v
		}
		// One round in four injects no fault: a plain power cut.
		p := []float64{0, 1.0 / 100, 1.0 / 1000, 1.0 / 10000}[rng.IntN(4)]
		disk.InjectFaults(int64(rng.Uint64()), p)
		stop := make(chan struct{})
		for w, cw := range writers {
			go cw.run(e, rand.New(rand.NewPCG(seed, uint64(rounds*crashWriters+w))), stop, up)
		}
		deadline := time.Now().Add(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		for time.Now().Before(deadline) && disk.Fatal() == "" {
			time.Sleep(5 * time.Millisecond)
		}
		if disk.Fatal() != "" {
			fatal++
		}
		faults += disk.Injected()
		// The old engine is abandoned: its machine is off.
		disk = disk.Crash(int64(rng.Uint64()))
		close(stop)
		e = open()

		got := map[int32]int{}
		cur, err := e.Find(context.Background(), "test", "c", FindSpec{})
		if err != nil {
			t.Fatal(err)
		}
		docs, err := cur.All(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			got[d.Lookup("_id").Int32()] = int(d.Lookup("v").AsInt64())
		}
		for w, cw := range writers {
			cw.mu.Lock()
			acked += cw.ops
			for id, v := range cw.acked {
				if g, ok := got[id]; (!ok || g != v) && !cw.inFlight.allows(id, g, ok) {
					t.Fatalf("round %d: _id %d acknowledged with v %d, found %v (present %v); seed %d", rounds, id, v, g, ok, seed)
				}
			}
			for id, g := range got {
				if int(id)%crashWriters != w {
					continue
				}
				if _, ok := cw.acked[id]; !ok && !cw.inFlight.allows(id, g, true) {
					t.Fatalf("round %d: _id %d present with v %d but acknowledged absent or never written; seed %d", rounds, id, g, seed)
				}
			}
			if cw.inFlight != nil {
				inFlight++
			}
			nextIDs[w] = cw.nextID
			cw.mu.Unlock()
		}
		truth = got
		// A write and its oplog entries survive a crash together or not
		// at all: the oplog replays to what is stored.
		rep := newOplogReplica()
		if err := rep.catchUp(context.Background(), e); err != nil {
			t.Fatalf("round %d: %v; seed %d", rounds, err, seed)
		}
		if err := rep.check(e, "test", "c"); err != nil {
			t.Fatalf("round %d: %v; seed %d", rounds, err, seed)
		}
		res, err := e.Validate(context.Background(), "test", "c", true)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Valid {
			t.Fatalf("round %d: the store does not validate: %v; seed %d", rounds, res.Errors, seed)
		}
	}
	e.Close()
	t.Logf("%d rounds, %d acknowledged writes checked, %d faults injected, %d rounds ended by a fatal store error, %d writes in flight at a crash, %d documents at the end",
		rounds, acked, faults, fatal, inFlight, len(truth))
}

// allows reports whether the document found for id (v, or absent) is the
// state the in-flight write would leave.
func (op *crashOp) allows(id int32, v int, present bool) bool {
	if op == nil || op.id != id {
		return false
	}
	if op.after == -1 {
		return !present
	}
	return present && v == op.after
}
