package engine

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// Transactions in the concurrent model test: workers move units between
// the counters of db.acct in transactions, and insert pairs of documents
// into db.pairs (deleting an older pair) in transactions that commit or
// abort, retrying on
// TransientTransactionError as drivers do; other workers rewrite the
// counters with plain writes (which wait for a transaction that holds
// them, and make it conflict) and change acct's indexes (which make
// transactions SnapshotUnavailable, or conflict at commit). Readers check,
// with plain reads and inside transactions (twice, which must agree),
// what only atomic commits keep: the counters' sum, and no half pair.
// Every call runs under the request deadline: a hang fails the test with
// every goroutine's stack.

const (
	txnAccounts = 6
	txnStart    = 100
	pairsKept   = 20
)

type txnConc struct {
	e    *Engine
	fail func(format string, args ...any)
	done func(i int) bool
	seed int64
	// present are the pairs that must be stored at the end: those whose
	// transactions committed, less those a later committed one deleted.
	present sync.Map
	mu      sync.Mutex
	counts  map[string]int
	total   *atomic.Int64
}

func (tc *txnConc) count(what string) {
	tc.mu.Lock()
	tc.counts[what]++
	tc.mu.Unlock()
}

// watch runs fn under the request deadline. It takes no part in the
// checker's pause of the other workers: a transaction between two
// statements may hold a key a paused plain write waits for, and its next
// statement must not wait for the pause.
func (tc *txnConc) watch(what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	timer := time.NewTimer(requestDeadline)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil && codeOf(err) < 0 {
			tc.fail("%s: %v", what, err)
		}
		return err
	case <-timer.C:
		tc.fail("%s did not finish within %v (seed %d); goroutines:\n%s", what, requestDeadline, tc.seed, goroutineDump())
		return errModelHang
	}
}

func transient(err error) bool {
	me, ok := mongoerr.As(err)
	return ok && slices.Contains(me.Labels, "TransientTransactionError")
}

// runTxn runs body in a transaction and commits it, retrying the whole on
// a TransientTransactionError; it aborts instead of committing when abort
// is set. It returns false if the test is failing.
func (tc *txnConc) runTxn(what string, abort bool, body func(ctx context.Context) error) bool {
	bg := context.Background()
	start := time.Now()
	for attempt := 0; ; attempt++ {
		var tx *Transaction
		if tc.watch(what+" begin", func() (err error) { tx, err = tc.e.BeginTransaction(bg, TransactionOptions{}); return err }) != nil {
			return false
		}
		err := tc.watch(what, func() error { return body(WithTransaction(bg, tx)) })
		if err == nil && !abort {
			err = tc.watch(what+" commit", func() error { return tx.Commit(bg) })
		}
		if err == errModelHang {
			// The statement still runs: an abort now would pull its
			// transaction from under it, which no client can do.
			return false
		}
		tx.Abort()
		switch {
		case err == nil:
			if abort {
				tc.count(what + ".aborted")
			} else {
				tc.count(what + ".committed")
			}
			return true
		case transient(err):
			tc.count(fmt.Sprintf("%s.retry.%d", what, codeOf(err)))
			if time.Since(start) > requestDeadline {
				tc.fail("%s: still conflicting after %d attempts in %v: %v", what, attempt, requestDeadline, err)
				return false
			}
			// Transactions that lock without waiting can keep failing
			// each other in step; a random pause, growing, breaks that.
			time.Sleep(time.Duration(rand.Intn(1+min(attempt, 20))) * 50 * time.Microsecond)
		default:
			if codeOf(err) >= 0 {
				tc.fail("%s: %v", what, err)
			}
			return false
		}
	}
}

func (tc *txnConc) inc(ctx context.Context, id, by int) error {
	u := modelRaw(bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: by}}}})
	up, err := compileUpdateOf(&modelOp{Upd: u}, nil, time.Now())
	if err != nil {
		return err
	}
	res, err := tc.e.Update(ctx, modelDB, "acct", UpdateSpec{Filter: modelRaw(bson.D{{Key: "_id", Value: id}}), Update: up})
	if err == nil && res.Matched != 1 {
		return fmt.Errorf("counter %d: matched %d", id, res.Matched)
	}
	return err
}

// readAll returns the documents of db.coll a read of ctx sees.
func (tc *txnConc) readAll(ctx context.Context, coll string) ([]bson.Raw, error) {
	cur, err := tc.e.Find(ctx, modelDB, coll, FindSpec{})
	if err != nil {
		return nil, err
	}
	return cur.All(ctx)
}

// invariants checks the counters' sum and the pairs in one read of ctx.
func (tc *txnConc) invariants(ctx context.Context) (string, error) {
	accts, err := tc.readAll(ctx, "acct")
	if err != nil {
		return "", err
	}
	sum := 0
	for _, d := range accts {
		sum += int(d.Lookup("n").AsInt64())
	}
	if len(accts) != txnAccounts || sum != txnAccounts*txnStart {
		return "", fmt.Errorf("counters: %d documents summing to %d, want %d summing to %d", len(accts), sum, txnAccounts, txnAccounts*txnStart)
	}
	pairs, err := tc.readAll(ctx, "pairs")
	if err != nil {
		return "", err
	}
	halves := map[string]int{}
	for _, d := range pairs {
		halves[d.Lookup("pair").StringValue()]++
	}
	for p, n := range halves {
		if n != 2 {
			return "", fmt.Errorf("pair %s has %d of its 2 documents", p, n)
		}
	}
	return fmt.Sprintf("%d %d", sum, len(pairs)), nil
}

// startTxnWorkers starts the transactions' workers and readers in wg.
func startTxnWorkers(e *Engine, seed int64, wg *sync.WaitGroup, done func(int) bool, fail func(string, ...any), total *atomic.Int64) *txnConc {
	tc := &txnConc{e: e, fail: fail, done: done, seed: seed, counts: map[string]int{}, total: total}
	bg := context.Background()
	for i := range txnAccounts {
		if _, err := e.Insert(bg, modelDB, "acct", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: i}, {Key: "n", Value: txnStart}})}, true); err != nil {
			fail("acct: %v", err)
		}
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed + 300 + int64(w)))
			for i := 0; !done(i); i++ {
				total.Add(1)
				from, to := r.Intn(txnAccounts), r.Intn(txnAccounts)
				ok := tc.runTxn("txn.transfer", false, func(ctx context.Context) error {
					if err := tc.inc(ctx, from, -1); err != nil {
						return err
					}
					return tc.inc(ctx, to, 1)
				})
				if !ok {
					return
				}
			}
		}()
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed + 400 + int64(w)))
			for i := 0; !done(i); i++ {
				total.Add(1)
				id := fmt.Sprintf("w%d-%d", w, i)
				// Each transaction also deletes an older pair, so that the
				// collection stays small enough to read in a moment.
				old := fmt.Sprintf("w%d-%d", w, i-pairsKept)
				abort := r.Intn(4) == 0
				docs := []bson.Raw{
					modelRaw(bson.D{{Key: "_id", Value: id + "a"}, {Key: "pair", Value: id}}),
					modelRaw(bson.D{{Key: "_id", Value: id + "b"}, {Key: "pair", Value: id}}),
				}
				ok := tc.runTxn("txn.pair", abort, func(ctx context.Context) error {
					for _, d := range docs {
						// One document a statement: a half is pending.
						res, err := e.Insert(ctx, modelDB, "pairs", []bson.Raw{d}, true)
						if err == nil && len(res.Errors) > 0 {
							err = res.Errors[0].Err
						}
						if err != nil {
							return err
						}
					}
					_, err := e.Delete(ctx, modelDB, "pairs", modelRaw(bson.D{{Key: "pair", Value: old}}), 0, bson.RawValue{})
					return err
				})
				if !ok {
					return
				}
				if !abort {
					tc.present.Store(id, true)
					tc.present.Delete(old)
				}
			}
		}()
	}
	// Plain writes of the counters that keep the sum, and index changes.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewSource(seed + 500))
		ix := modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "name", Value: "n_1"}})
		for i := 0; !done(i); i++ {
			total.Add(1)
			var err error
			switch k := r.Intn(10); {
			case k == 0:
				err = tc.watch("acct createIndexes", func() error { _, err := e.CreateIndexes(bg, modelDB, "acct", []bson.Raw{ix}); return err })
				tc.count("txn.plain.createIndexes")
			case k == 1:
				err = tc.watch("acct dropIndexes", func() error { _, err := e.DropIndexes(bg, modelDB, "acct", rawValue("n_1")); return err })
				tc.count("txn.plain.dropIndexes")
			default:
				id := r.Intn(txnAccounts)
				err = tc.watch("acct plain inc", func() error { return tc.inc(bg, id, 0) })
				tc.count("txn.plain.rewrite")
			}
			if err != nil && codeOf(err) < 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	// Readers: plain, and in a transaction twice (a repeatable read).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done(i); i++ {
			if tc.watch("txn.read plain", func() error {
				_, err := tc.invariants(bg)
				return err
			}) != nil {
				tc.fail("plain read of the invariants failed")
				return
			}
			ok := tc.runTxn("txn.read", true, func(ctx context.Context) error {
				first, err := tc.invariants(ctx)
				if err != nil {
					return err
				}
				second, err := tc.invariants(ctx)
				if err == nil && first != second {
					err = fmt.Errorf("a transaction read %s, then %s", first, second)
				}
				return err
			})
			if !ok {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return tc
}

// finish checks the final state: the invariants, and exactly the pairs
// the committed transactions left.
func (tc *txnConc) finish() error {
	bg := context.Background()
	if _, err := tc.invariants(bg); err != nil {
		return err
	}
	docs, err := tc.readAll(bg, "pairs")
	if err != nil {
		return err
	}
	stored := map[string]bool{}
	for _, d := range docs {
		stored[d.Lookup("pair").StringValue()] = true
	}
	want := 0
	tc.present.Range(func(k, _ any) bool {
		want++
		if !stored[k.(string)] {
			err = fmt.Errorf("the pair %s a committed transaction inserted is missing", k)
		}
		return err == nil
	})
	if err == nil && len(stored) != want {
		err = fmt.Errorf("%d pairs stored, %d committed and not deleted since", len(stored), want)
	}
	return err
}
