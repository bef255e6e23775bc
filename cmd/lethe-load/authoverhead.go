package main

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// authOverheadRounds is how many times auth-overhead measures each
// variant, in an order that changes every round.
const authOverheadRounds = 4

// runAuthOverhead measures what access control costs every request, the
// check of the command against the user's privileges: findOne by _id and
// insertOne from an authenticated client of a server with --auth, against
// the same from a client of a server without it, in alternating rounds of
// the same run. Connections are pooled and logged in beforehand.
func runAuthOverhead(ctx context.Context, e *env) ([]result, error) {
	var colls [2]*mongo.Collection // with access control, without
	for i, authOn := range []bool{true, false} {
		var client *mongo.Client
		if authOn {
			addr, stop, err := startAuthServer(ctx)
			if err != nil {
				return nil, err
			}
			defer stop()
			if client, err = authClient(ctx, addr, e.cfg.clients); err != nil {
				return nil, err
			}
		} else {
			addr, stop, err := startServer(serverKind{})
			if err != nil {
				return nil, err
			}
			defer stop()
			if client, err = pooledClient(ctx, addr, e.cfg.clients); err != nil {
				return nil, err
			}
		}
		defer client.Disconnect(context.Background())
		pe := &env{cfg: e.cfg, db: client.Database(e.db.Name()), progress: e.progress}
		coll, err := pe.preload(ctx)
		if err != nil {
			return nil, err
		}
		colls[i] = coll
	}
	round := e.cfg.duration / authOverheadRounds
	// The preloads' flushes and compactions would slow whichever round
	// came first: let them pass under unmeasured ones.
	for _, coll := range colls {
		if _, err := measureFor(ctx, e.cfg.clients, round/2, findOneOp(coll, e.cfg.docs)); err != nil {
			return nil, err
		}
	}
	samples, err := alternate(authOverheadRounds, 4, func(i int) (sample, error) {
		coll := colls[i%2]
		if i < 2 {
			return measureFor(ctx, e.cfg.clients, round, findOneOp(coll, e.cfg.docs))
		}
		newOp, err := insertOp(coll.Database().Collection("insert"))
		if err != nil {
			return sample{}, err
		}
		return measureFor(ctx, e.cfg.clients, round, newOp)
	})
	if err != nil {
		return nil, err
	}
	return []result{
		{name: "findone-auth", sample: samples[0], ceiling: "findone-noauth"},
		{name: "findone-noauth", sample: samples[1]},
		{name: "insert-auth", sample: samples[2], ceiling: "insert-noauth"},
		{name: "insert-noauth", sample: samples[3]},
	}, nil
}
