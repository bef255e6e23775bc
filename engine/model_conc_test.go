package engine

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/validation"
	"github.com/lethedb/lethe/mongoerr"
)

// requestDeadline is how long any one request may take before the
// concurrent test calls it hung.
const requestDeadline = 10 * time.Second

// TestModelConcurrent runs random operations from several goroutines on
// overlapping keys of one collection (index DDL, upserts on absent and
// just-expired _ids, findAndModify, clock moves and reaper passes
// included), each request under a watchdog, while other goroutines insert
// into a second collection whose indexes and validator change under them
// (an insert that ran under one validator setting must obey it).
// Afterwards the store validates, unique indexes hold, every index agrees
// with the documents, every acknowledged insert of the second collection
// is there, and no insert the validator refused is. Transactions run
// alongside (model_txn_conc_test.go).
func TestModelConcurrent(t *testing.T) {
	for _, backend := range modelBackends() {
		for _, servers := range modelServerCounts(backend) {
			name := backend
			if servers > 1 {
				name = fmt.Sprintf("%s-%dservers", backend, servers)
			}
			t.Run(name, func(t *testing.T) { testModelConcurrent(t, backend, servers) })
		}
	}
}

func testModelConcurrent(t *testing.T, backend string, nServers int) {
	cfg := modelSettings(t, 0)
	seed := cfg.seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	opsPerWorker := 500
	if cfg.steps > 0 {
		opsPerWorker = cfg.steps / 6
	}
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// The reaper runs as a goroutine of the test, so that the checker can
	// pause it with the workers.
	dir := t.TempDir()
	e, err := openModelEngine(backend, dir, Options{Clock: clock, NoReaper: true, Oplog: true})
	if err != nil {
		t.Fatal(err)
	}
	// On the TiKV mock the workers are spread over nServers servers
	// sharing the store (issue 22): more engines on the same cluster, each
	// with its own catalog, roster lease and writers. The checks read
	// through the first.
	servers := []*Engine{e}
	if backend == "tikv-mock" {
		for i := 1; i < nServers; i++ {
			more, err := openModelEngine(backend, dir, Options{Clock: clock, NoReaper: true, Oplog: true})
			if err != nil {
				t.Fatal(err)
			}
			defer more.Close()
			servers = append(servers, more)
		}
	}
	server := func(w int) *Engine { return servers[w%len(servers)] }
	ctx := context.Background()
	start := time.Now()
	var (
		stop    atomic.Bool
		hung    atomic.Bool
		mu      sync.Mutex
		failure []string
		counts  = map[string]int{}
		total   atomic.Int64
	)
	var quiet sync.RWMutex
	fail := func(format string, args ...any) {
		mu.Lock()
		failure = append(failure, fmt.Sprintf(format, args...))
		mu.Unlock()
		stop.Store(true)
	}
	// guard runs one request with the deadline; a hang dumps every stack.
	guard := func(what string, fn func() error) bool {
		quiet.RLock()
		defer quiet.RUnlock()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		timer := time.NewTimer(requestDeadline)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil && codeOf(err) < 0 {
				fail("%s: %v", what, err)
				return false
			}
			return true
		case <-timer.C:
			hung.Store(true)
			fail("%s did not finish within %v (seed %d); goroutines:\n%s", what, requestDeadline, seed, goroutineDump())
			return false
		}
	}
	done := func(i int) bool {
		if stop.Load() {
			return true
		}
		if cfg.duration > 0 {
			return time.Since(start) >= cfg.duration
		}
		return i >= opsPerWorker
	}

	// Workers hold quiet shared while they run a request; the checker
	// takes it exclusively now and then to check the invariants on a
	// collection at rest.
	checks := 0
	var wg sync.WaitGroup
	checkerDone := make(chan struct{})
	go func() {
		defer close(checkerDone)
		for !stop.Load() {
			time.Sleep(100 * time.Millisecond)
			quiet.Lock()
			if !stop.Load() {
				checks++
				for _, coll := range []string{modelColl, "ack"} {
					if !e.CollectionExists(ctx, modelDB, coll) {
						continue
					}
					if err := validateStore(ctx, e, modelDB, coll); err != nil {
						fail("%s: %v", coll, err)
					}
				}
				if err := checkUniqueHolds(ctx, e, modelDB, modelColl); err != nil {
					fail("%v", err)
				}
			}
			quiet.Unlock()
		}
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			g := &modelGen{r: rand.New(rand.NewSource(seed + int64(w))), now: clock.Now, noDrop: true}
			local := map[string]int{}
			for i := 0; !done(i); i++ {
				op := g.next()
				if op.Kind == "clock" && op.Dur < 0 {
					op.Dur = -op.Dur // forward only: expiry races, not time travel
				}
				local[kindLabel(op)]++
				total.Add(1)
				if !guard(op.String(), func() error { return execConcurrentOp(ctx, server(w), clock, op) }) {
					return
				}
			}
			mu.Lock()
			for k, v := range local {
				counts[k] += v
			}
			mu.Unlock()
		}(w)
	}

	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done(i); i++ {
			if !guard("reaper pass", func() error { _, err := server(i).Reaper().Pass(); return err }) {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	// The ack collection: inserts of fresh and contested _ids, while its
	// indexes are created and dropped and its validator {n: {$lt: 3}}
	// comes and goes. valSeq is odd while the validator changes; an insert
	// that saw the same even valSeq before and after ran under valOn.
	var acked sync.Map // _id -> true
	var contested, refused sync.Map
	var valSeq, nRefused, nUnderValidator atomic.Int64
	var valOn atomic.Bool
	if err := e.CreateCollection(ctx, "db", "ack", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewSource(seed + 200))
		for i := 0; !done(i); i++ {
			on := r.Intn(2) == 0
			ch := CollectionValidation{Validator: modelRaw(bson.D{})}
			if on {
				level, action := validation.LevelStrict, validation.ActionError
				ch = CollectionValidation{Validator: modelRaw(bson.D{{Key: "n", Value: bson.D{{Key: "$lt", Value: 3}}}}), Level: &level, Action: &action}
			}
			total.Add(1)
			valSeq.Add(1)
			ok := guard("ack setValidation", func() error {
				err := server(i).SetValidation(ctx, "db", "ack", ch)
				if err == nil {
					valOn.Store(on)
				}
				return err
			})
			valSeq.Add(1)
			if !ok {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed + 100 + int64(w)))
			for i := 0; !done(i); i++ {
				total.Add(1)
				switch k := r.Intn(20); {
				case k == 0:
					spec := modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_1"}})
					guard("ack createIndexes", func() error {
						_, err := server(w).CreateIndexes(ctx, "db", "ack", []bson.Raw{spec})
						return err
					})
				case k == 1:
					guard("ack dropIndexes", func() error {
						_, err := server(w+1).DropIndexes(ctx, "db", "ack", rawValue("n_1"))
						return err
					})
				case k < 5:
					id := fmt.Sprintf("contested-%d", r.Intn(20))
					doc := modelRaw(bson.D{{Key: "_id", Value: id}, {Key: "n", Value: r.Intn(5)}})
					guard("ack insert contested", func() error {
						res, err := server(w+i).Insert(context.Background(), "db", "ack", []bson.Raw{doc}, true)
						if err == nil && res.N == 1 {
							contested.Store(id, true)
						}
						return err
					})
				default:
					id := fmt.Sprintf("w%d-%d", w, i)
					doc := modelRaw(bson.D{{Key: "_id", Value: id}, {Key: "n", Value: r.Intn(5)}})
					ordered := r.Intn(2) == 0
					n := doc.Lookup("n").Int32()
					guard("ack insert", func() error {
						before, on := valSeq.Load(), valOn.Load()
						res, err := server(w+i).Insert(context.Background(), "db", "ack", []bson.Raw{doc}, ordered)
						if err != nil {
							return err
						}
						stable := before%2 == 0 && valSeq.Load() == before
						if stable && on {
							nUnderValidator.Add(1)
						}
						if res.N == 1 {
							if stable && on && n >= 3 {
								return fmt.Errorf("insert of %s passed the validator {n: {$lt: 3}}", doc)
							}
							acked.Store(id, true)
							return nil
						}
						if len(res.Errors) != 1 || codeOf(res.Errors[0].Err) != int(mongoerr.DocumentValidationFailure) || n < 3 || stable && !on {
							return fmt.Errorf("insert of fresh _id %s (n=%d, validator on %v, unchanged %v): n=%d errors=%v", id, n, on, stable, res.N, res.Errors)
						}
						refused.Store(id, true)
						nRefused.Add(1)
						return nil
					})
				}
			}
		}(w)
	}
	tc := startTxnWorkers(e, seed, &wg, done, fail, &total)
	wg.Wait()
	stop.Store(true)
	<-checkerDone
	if len(failure) > 0 {
		t.Fatalf("concurrent model test (seed %d):\n%s", seed, strings.Join(failure, "\n"))
	}

	if err := tc.finish(); err != nil {
		t.Error(err)
	}
	for k, v := range tc.counts {
		counts[k] += v
	}
	// The store as a whole.
	for _, coll := range []string{modelColl, "ack", "acct", "pairs"} {
		if err := validateStore(ctx, e, modelDB, coll); err != nil {
			t.Errorf("%s: %v", coll, err)
		}
	}
	if err := checkUniqueHolds(ctx, e, modelDB, modelColl); err != nil {
		t.Error(err)
	}
	// The oplog of the concurrent writes replays to the stored state.
	rep := newOplogReplica()
	if err := rep.catchUp(ctx, e, servers[1:]...); err != nil {
		t.Error(err)
	}
	for _, coll := range []string{modelColl, "ack", "acct", "pairs"} {
		if err := rep.check(e, modelDB, coll); err != nil {
			t.Error(err)
		}
	}
	missing := 0
	acked.Range(func(k, _ any) bool {
		if d, err := e.FindByID(context.Background(), "db", "ack", bsonString(k.(string))); err != nil || d == nil {
			missing++
			if missing < 10 {
				t.Errorf("acknowledged insert %s is missing (%v)", k, err)
			}
		}
		return true
	})
	refused.Range(func(k, _ any) bool {
		if d, _ := e.FindByID(context.Background(), "db", "ack", bsonString(k.(string))); d != nil {
			t.Errorf("insert %s refused by the validator is stored", k)
		}
		return true
	})
	contested.Range(func(k, _ any) bool {
		if d, _ := e.FindByID(context.Background(), "db", "ack", bsonString(k.(string))); d == nil {
			t.Errorf("acknowledged insert %s is missing", k)
		}
		return true
	})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("model summary: concurrent backend=%s servers=%d seed=%d workers=4+2+1+6 requests=%d checks=%d duration=%v ack: inserts under a steady validator=%d refused=%d ops: %s",
		backend, len(servers), seed, total.Load(), checks, time.Since(start).Round(time.Millisecond), nUnderValidator.Load(), nRefused.Load(), formatCounts(counts))
}

func bsonString(s string) bsoncore.Value {
	return rawIDValue(rawValue(s))
}

// execConcurrentOp runs op on the engine; only errors without a MongoDB
// code count as failures, since races make any write error legitimate.
func execConcurrentOp(ctx context.Context, e *Engine, clock *clock.Manual, op *modelOp) error {
	filter, pipe, err := letBound(op, clock.Now())
	if err != nil {
		return err
	}
	ctx = WithCollation(ctx, op.Collation)
	switch op.Kind {
	case "insert":
		_, err := e.Insert(ctx, modelDB, modelColl, op.Docs, op.Ordered, WriteOptions{BypassDocumentValidation: op.Bypass})
		return err
	case "update":
		u, err := compileUpdateOf(op, pipe, clock.Now())
		if err != nil {
			return nil
		}
		if !op.Multi && op.Sort == nil && nearOperator(op.Filter) == "" {
			op.Sort = modelRaw(bson.D{{Key: "_id", Value: 1}})
		}
		_, err = e.Update(ctx, modelDB, modelColl, UpdateSpec{Filter: filter, Update: u, Multi: op.Multi, Upsert: op.Upsert, Sort: op.Sort, BypassDocumentValidation: op.Bypass})
		return err
	case "findAndModify":
		spec := FindAndModifySpec{Filter: filter, Sort: op.Sort, Fields: op.Proj, Remove: op.Remove, New: op.New, Upsert: op.Upsert, BypassDocumentValidation: op.Bypass}
		if !op.Remove {
			u, err := compileUpdateOf(op, pipe, clock.Now())
			if err != nil {
				return nil
			}
			spec.Update = u
		}
		_, err := e.FindAndModify(ctx, modelDB, modelColl, spec)
		return err
	case "delete":
		_, err := e.Delete(ctx, modelDB, modelColl, filter, int(op.Limit), bson.RawValue{})
		return err
	case "setValidation":
		ch := CollectionValidation{Validator: op.Validator}
		if op.Level != "" {
			ch.Level = &op.Level
		}
		if op.Action != "" {
			ch.Action = &op.Action
		}
		return e.SetValidation(ctx, modelDB, modelColl, ch)
	case "preImages":
		return e.SetPreAndPostImages(ctx, modelDB, modelColl, op.PreImages)
	case "aggregate":
		_, err := e.Aggregate(ctx, modelDB, modelColl, aggregateStages(op, filter), AggregateOptions{})
		return err
	case "count":
		_, err := e.Count(ctx, modelDB, modelColl, op.Filter, op.Skip, op.Limit, op.Hint)
		return err
	case "distinct":
		_, err := e.Distinct(ctx, modelDB, modelColl, op.Key, op.Filter)
		return err
	case "find":
		cur, err := e.Find(ctx, modelDB, modelColl, FindSpec{Filter: filter, Sort: op.Sort, Projection: op.Proj, Skip: op.Skip, Limit: op.Limit, Hint: op.Hint, Min: op.Min, Max: op.Max, ReturnKey: op.ReturnKey})
		if err != nil {
			return err
		}
		_, err = cur.All(ctx)
		return err
	case "createIndexes":
		_, err := e.CreateIndexes(ctx, modelDB, modelColl, op.Specs)
		return err
	case "dropIndexes":
		_, err := e.DropIndexes(ctx, modelDB, modelColl, op.Which)
		return err
	case "collMod":
		ch := op.indexChange()
		_, err := e.CollModIndex(ctx, modelDB, modelColl, ch)
		return err
	case "findBatches":
		cur, err := e.Find(ctx, modelDB, modelColl, FindSpec{Filter: op.Filter, Sort: op.Sort})
		if err != nil {
			return err
		}
		if _, err := cur.NextBatch(ctx, 2, 1<<30); err != nil {
			return err
		}
		clock.Advance(op.Dur / 4)
		_, err = cur.All(ctx)
		return err
	case "clock":
		clock.Advance(op.Dur)
	case "reap":
		_, err := e.Reaper().Pass()
		return err
	}
	return nil
}

// checkUniqueHolds checks that no two visible documents share a key of a
// unique index, by the model's own key rules.
func checkUniqueHolds(ctx context.Context, e *Engine, db, coll string) error {
	specs, err := e.ListIndexes(ctx, db, coll)
	if err != nil {
		return nil // no collection
	}
	cur, err := e.Find(ctx, db, coll, FindSpec{})
	if err != nil {
		return err
	}
	docs, err := cur.All(ctx)
	if err != nil {
		return err
	}
	for _, s := range specs[1:] {
		ix, err := parseRefIndex(modelRaw(s))
		if err != nil || !ix.unique {
			continue
		}
		for i, a := range docs {
			for _, b := range docs[i+1:] {
				if ix.collide(a, b) {
					return fmt.Errorf("unique index %s: %s and %s share a key", ix.name, a, b)
				}
			}
		}
	}
	return nil
}
