package main

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The aggregation workloads time whole pipelines over large collections,
// one client at a time: each run reads every document, so concurrent runs
// would only measure how they share the cores.

// groupKeys is the number of distinct keys the $group workload groups by.
const groupKeys = 10

// runAggGroup groups cfg.groupDocs documents by a key of groupKeys values,
// summing and counting per group.
func runAggGroup(ctx context.Context, e *env) ([]result, error) {
	n := e.cfg.groupDocs
	coll := e.db.Collection("agg_group")
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	e.logf("loading %d documents for the $group workload", n)
	err := bulkLoad(ctx, coll, n, e.cfg.clients, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "k", Value: int32(i % groupKeys)}, {Key: "n", Value: int32(i % 1000)}}
	})
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	pipeline := mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$k"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$n"}}}, {Key: "count", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	}
	s, err := measureFor(ctx, 1, e.cfg.duration, func(int) op {
		return func(ctx context.Context) error {
			var groups []struct {
				Count int64 `bson:"count"`
			}
			if err := aggregateAll(ctx, coll, pipeline, &groups); err != nil {
				return err
			}
			total := int64(0)
			for _, g := range groups {
				total += g.Count
			}
			if len(groups) != min(groupKeys, n) || total != int64(n) {
				return fmt.Errorf("$group made %d groups of %d documents, want %d of %d", len(groups), total, min(groupKeys, n), n)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "agg-group", sample: s}}, nil
}

// runAggLookup joins two collections of cfg.lookupDocs documents each on a
// field the foreign collection indexes; every local document joins one
// foreign document.
func runAggLookup(ctx context.Context, e *env) ([]result, error) {
	n := e.cfg.lookupDocs
	local, foreign := e.db.Collection("agg_local"), e.db.Collection("agg_foreign")
	for _, c := range []*mongo.Collection{local, foreign} {
		if err := drop(ctx, c); err != nil {
			return nil, err
		}
	}
	e.logf("loading 2 x %d documents for the $lookup workload", n)
	err := bulkLoad(ctx, foreign, n, e.cfg.clients, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "key", Value: int64(i)}, {Key: "name", Value: fmt.Sprintf("item %d", i)}}
	})
	if err == nil {
		// A permutation of the keys, so that the join does not read the
		// index in order.
		err = bulkLoad(ctx, local, n, e.cfg.clients, func(i int) bson.D {
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "fk", Value: int64(i) * 7919 % int64(n)}}
		})
	}
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if _, err := foreign.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "key", Value: 1}}}); err != nil {
		return nil, fmt.Errorf("create index {key: 1}: %w", err)
	}
	pipeline := mongo.Pipeline{
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: foreign.Name()}, {Key: "localField", Value: "fk"}, {Key: "foreignField", Value: "key"}, {Key: "as", Value: "joined"}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "joined", Value: bson.D{{Key: "$sum", Value: bson.D{{Key: "$size", Value: "$joined"}}}}}}}},
	}
	s, err := measureFor(ctx, 1, e.cfg.duration, func(int) op {
		return func(ctx context.Context) error {
			var out []struct {
				Joined int64 `bson:"joined"`
			}
			if err := aggregateAll(ctx, local, pipeline, &out); err != nil {
				return err
			}
			if len(out) != 1 || out[0].Joined != int64(n) {
				return fmt.Errorf("$lookup joined %v, want %d documents", out, n)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "agg-lookup", sample: s}}, nil
}

// aggregateAll runs a pipeline and decodes all its results into out.
func aggregateAll(ctx context.Context, coll *mongo.Collection, pipeline mongo.Pipeline, out any) error {
	cur, err := coll.Aggregate(ctx, pipeline)
	if err != nil {
		return err
	}
	return cur.All(ctx, out)
}
