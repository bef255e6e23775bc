package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
)

// The bank invariant: goroutines move money between accounts in
// transactions while readers sum every balance, in transactions and in
// snapshot reads; the sum never changes. Then the server is killed with
// SIGKILL mid-run and restarted: the sum still holds, and every transfer
// whose commit was acknowledged is there (each writes a ledger entry in
// its transaction).
func TestTransactionBankInvariantSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	const accounts, initial = 10, 1000
	bin := buildLethe(t)
	dir := t.TempDir()
	cmd, client := startChild(t, bin, dir, "--repl-set", "rs0")
	db := client.Database("bank")
	if err := db.CreateCollection(ctx, "accounts"); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "ledger"); err != nil {
		t.Fatal(err)
	}
	var docs []any
	for i := range accounts {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "balance", Value: initial}})
	}
	if _, err := db.Collection("accounts").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}

	var (
		mu        sync.Mutex
		acked     []string        // ledger ids of acknowledged transfers
		readSums  [2]atomic.Int64 // in transactions, in snapshot reads
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		badSum    atomic.Value
		transfers atomic.Int64
	)
	sumOf := func(ctx context.Context, coll *mongo.Collection) (int, error) {
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			return 0, err
		}
		var all []struct {
			Balance int `bson:"balance"`
		}
		if err := cur.All(ctx, &all); err != nil {
			return 0, err
		}
		if len(all) != accounts {
			return 0, fmt.Errorf("%d accounts, want %d", len(all), accounts)
		}
		sum := 0
		for _, a := range all {
			sum += a.Balance
		}
		return sum, nil
	}
	// The workers' context ends at the kill, and each transaction has a
	// deadline of its own: past the kill the driver would retry their
	// transactions, whose network errors are transient, for two minutes.
	wctx, cancelWorkers := context.WithCancel(ctx)
	defer cancelWorkers()
	errStopped := errors.New("stopped")
	withTxn := func(sess *mongo.Session, fn func(context.Context) error) error {
		tctx, cancel := context.WithTimeout(wctx, 10*time.Second)
		defer cancel()
		_, err := sess.WithTransaction(tctx, func(ctx context.Context) (any, error) {
			if wctx.Err() != nil {
				return nil, errStopped
			}
			return nil, fn(ctx)
		})
		return err
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; !stopped(); i++ {
				from, to := rng.IntN(accounts), rng.IntN(accounts)
				if from == to {
					continue
				}
				amount := 1 + rng.IntN(50)
				id := fmt.Sprintf("%d-%d", w, i)
				sess, err := client.StartSession()
				if err != nil {
					return
				}
				err = withTxn(sess, func(ctx context.Context) error {
					acc := db.Collection("accounts")
					if _, err := acc.UpdateOne(ctx, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: -amount}}}}); err != nil {
						return err
					}
					if _, err := acc.UpdateOne(ctx, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: amount}}}}); err != nil {
						return err
					}
					_, err := db.Collection("ledger").InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "amount", Value: amount}})
					return err
				})
				sess.EndSession(context.Background())
				if err != nil {
					continue // the kill; or a transient error WithTransaction gave up on
				}
				transfers.Add(1)
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stopped() {
				var sum int
				var err error
				if r == 0 {
					sess, serr := client.StartSession()
					if serr != nil {
						return
					}
					err = withTxn(sess, func(ctx context.Context) error {
						s, err := sumOf(ctx, db.Collection("accounts"))
						sum = s
						return err
					})
					sess.EndSession(context.Background())
				} else {
					sess, serr := client.StartSession(options.Session().SetSnapshot(true))
					if serr != nil {
						return
					}
					err = mongo.WithSession(wctx, sess, func(ctx context.Context) error {
						s, err := sumOf(ctx, db.Collection("accounts", options.Collection().SetReadConcern(readconcern.Snapshot())))
						sum = s
						return err
					})
					sess.EndSession(context.Background())
				}
				if err != nil {
					if !stopped() && readSums[r].Load() == 0 {
						badSum.Store(fmt.Sprintf("a reader (%d) failed: %v", r, err))
					}
					continue
				}
				readSums[r].Add(1)
				if sum != accounts*initial {
					badSum.Store(fmt.Sprintf("a reader (%d) summed %d", r, sum))
				}
			}
		}()
	}
	waitFor := func(what string, ok func() bool) {
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("200 transfers and 25 sums of each kind", func() bool {
		return transfers.Load() >= 200 && readSums[0].Load() >= 25 && readSums[1].Load() >= 25 || badSum.Load() != nil
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	close(stop)
	cancelWorkers()
	// Disconnecting fails at once what the workers still try (aborts and
	// session ends that would wait out server selection).
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	client.Disconnect(dctx)
	cancel()
	wg.Wait()
	if v := badSum.Load(); v != nil {
		t.Fatal(v)
	}

	cmd, client = startChild(t, bin, dir, "--repl-set", "rs0")
	defer func() {
		client.Disconnect(ctx)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	db = client.Database("bank")
	sum, err := sumOf(ctx, db.Collection("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	if sum != accounts*initial {
		t.Fatalf("after the kill and a restart the balances sum to %d, want %d", sum, accounts*initial)
	}
	cur, err := db.Collection("ledger").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for cur.Next(ctx) {
		present[cur.Current.Lookup("_id").StringValue()] = true
	}
	var lost []string
	for _, id := range acked {
		if !present[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged transfers are gone after the kill: %v", len(lost), len(acked), lost[:min(len(lost), 10)])
	}
	t.Logf("%d acknowledged transfers, %d+%d sums read, all kept", len(acked), readSums[0].Load(), readSums[1].Load())
}
