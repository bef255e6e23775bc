package main

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// oplogRounds is how many times the oplog-cost workload measures each
// server; the order alternates so that neither side always goes first.
const oplogRounds = 4

// runOplogCost measures what the oplog costs inserts (the issue allows
// 15%): the insert workload against two fresh in-process servers, one with
// the oplog and one without, in alternating rounds of the same run, so that
// both see the same machine load and the same data size.
func runOplogCost(ctx context.Context, e *env) ([]result, error) {
	var colls [2]*mongo.Collection // with the oplog, without
	for i, noOplog := range []bool{false, true} {
		addr, stop, err := startServer(serverKind{noOplog: noOplog})
		if err != nil {
			return nil, err
		}
		defer stop()
		client, err := pooledClient(ctx, addr, e.cfg.clients)
		if err != nil {
			return nil, err
		}
		defer client.Disconnect(context.Background())
		colls[i] = client.Database(e.db.Name()).Collection("insert")
		if err := drop(ctx, colls[i]); err != nil {
			return nil, err
		}
	}
	var samples [2]sample
	round := e.cfg.duration / oplogRounds
	for r := range oplogRounds {
		for k := range 2 {
			i := (r + k) % 2
			newOp, err := insertOp(colls[i])
			if err != nil {
				return nil, err
			}
			s, err := measureFor(ctx, e.cfg.clients, round, newOp)
			if err != nil {
				return nil, err
			}
			samples[i] = mergeSamples(samples[i], s)
		}
	}
	return []result{
		{name: "insert-oplog", sample: samples[0], ceiling: "insert-nooplog", target: 0.85},
		{name: "insert-nooplog", sample: samples[1]},
	}, nil
}

func mergeSamples(a, b sample) sample {
	if a.latency == nil {
		return b
	}
	a.latency.merge(b.latency)
	return sample{ops: a.ops + b.ops, elapsed: a.elapsed + b.elapsed, latency: a.latency}
}
