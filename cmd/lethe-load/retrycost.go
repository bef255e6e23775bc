package main

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// retryRounds is how many times retry-cost measures each variant.
const retryRounds = 4

// runRetryCost measures what retryable writes cost inserts: a server in
// replica-set mode, where drivers make every write retryable by default
// (each insert then records its outcome with the write), against the same
// server's inserts from a client with retryWrites=false, in alternating
// rounds of the same run.
func runRetryCost(ctx context.Context, e *env) ([]result, error) {
	addr, stop, err := startServer(serverKind{replSet: "rs0"})
	if err != nil {
		return nil, err
	}
	defer stop()
	var colls [2]*mongo.Collection // retryable, not
	for i, retry := range []bool{true, false} {
		client, err := pooledClient(ctx, addr, e.cfg.clients, options.Client().SetRetryWrites(retry))
		if err != nil {
			return nil, err
		}
		defer client.Disconnect(context.Background())
		colls[i] = client.Database(e.db.Name()).Collection(fmt.Sprintf("insert%d", i))
		if err := drop(ctx, colls[i]); err != nil {
			return nil, err
		}
	}
	round := e.cfg.duration / retryRounds
	samples, err := alternate(retryRounds, 2, func(i int) (sample, error) {
		newOp, err := insertOp(colls[i])
		if err != nil {
			return sample{}, err
		}
		return measureFor(ctx, e.cfg.clients, round, newOp)
	})
	if err != nil {
		return nil, err
	}
	return []result{
		{name: "insert-retryable", sample: samples[0], ceiling: "insert-not-retryable"},
		{name: "insert-not-retryable", sample: samples[1]},
	}, nil
}
