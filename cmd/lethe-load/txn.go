package main

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// txnRounds is how many times the txn workload alternates plain inserts
// alone and plain inserts beside transactions.
const txnRounds = 4

// runTxn measures multi-document transactions on a server in replica-set
// mode: transactions of 1, 10 and 100 inserts each (transactions per
// second and their latency, p99 included), each driven by the driver's
// WithTransaction, which retries transient errors as applications do; then
// plain inserts while as many clients run transactions of 10 inserts,
// against plain inserts alone, alternated in rounds of the same run.
func runTxn(ctx context.Context, e *env) ([]result, error) {
	var (
		addr string
		stop func() error
		err  error
	)
	if e.cfg.serverBin == "" {
		addr, stop, err = startServer(serverKind{replSet: "rs0"})
	} else {
		// The --server-bin binary, with --server-args, so that
		// transactions can be measured on another build or store.
		var c *childServer
		if c, err = startChild(ctx, e.cfg.serverBin, append([]string{"--repl-set", "rs0"}, e.cfg.serverArgs...)); err == nil {
			addr, stop = c.addr, c.stop
		}
	}
	if err != nil {
		return nil, err
	}
	defer stop()
	client, err := pooledClient(ctx, addr, 2*e.cfg.clients)
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(context.Background())
	db := client.Database(e.db.Name())
	txnColl, plainColl := db.Collection("txn"), db.Collection("txnplain")
	for _, c := range []*mongo.Collection{txnColl, plainColl} {
		if err := drop(ctx, c); err != nil {
			return nil, err
		}
		// Transactions write to existing collections: one created by a
		// transaction's own insert stays if it aborts.
		if err := db.CreateCollection(ctx, c.Name()); err != nil {
			return nil, fmt.Errorf("create %s: %w", c.Name(), err)
		}
	}
	var results []result
	share := e.cfg.duration / 5
	for _, size := range []int{1, 10, 100} {
		s, err := measureFor(ctx, e.cfg.clients, share, txnOp(client, txnColl, size))
		if err != nil {
			return nil, fmt.Errorf("transactions of %d: %w", size, err)
		}
		results = append(results, result{name: fmt.Sprintf("txn-%d", size), sample: s})
	}
	insert, err := insertOp(plainColl)
	if err != nil {
		return nil, err
	}
	round := 2 * share / txnRounds
	samples, err := alternate(txnRounds, 2, func(i int) (sample, error) {
		if i == 0 {
			return measureFor(ctx, e.cfg.clients, round, insert)
		}
		// Beside: as many clients run transactions of 10 until the
		// plain inserts are measured.
		done := make(chan struct{})
		bg := make(chan error, 1)
		go func() {
			_, err := measureUntil(ctx, e.cfg.clients, done, txnOp(client, txnColl, 10))
			bg <- err
		}()
		s, err := measureFor(ctx, e.cfg.clients, round, insert)
		close(done)
		if berr := <-bg; err == nil {
			err = berr
		}
		return s, err
	})
	if err != nil {
		return nil, err
	}
	return append(results,
		result{name: "insert-alone", sample: samples[0]},
		result{name: "insert-beside-txns", sample: samples[1], ceiling: "insert-alone"},
	), nil
}

// txnOp runs one transaction of size inserts per call, in a session of
// its client's own.
func txnOp(client *mongo.Client, coll *mongo.Collection, size int) func(int) op {
	return func(int) op {
		return func(ctx context.Context) error {
			sess, err := client.StartSession()
			if err != nil {
				return err
			}
			defer sess.EndSession(context.Background())
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
				for i := range size {
					doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "i", Value: int32(i)}}
					if _, err := coll.InsertOne(ctx, doc); err != nil {
						return nil, err
					}
				}
				return nil, nil
			})
			return err
		}
	}
}
