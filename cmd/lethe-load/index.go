package main

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// runIndex measures the same find by a secondary field twice over
// cfg.indexDocs documents: first as a collection scan, then through an
// index on the field. The field has one value per findBatch documents, so
// each find returns as many documents as find100 does.
func runIndex(ctx context.Context, e *env) ([]result, error) {
	n := e.cfg.indexDocs
	coll := e.db.Collection("indexed")
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	categories := max(n/findBatch, 1)
	pad, err := padding(bson.D{{Key: "_id", Value: int64(0)}, {Key: "cat", Value: int32(0)}, {Key: "n", Value: int32(0)}})
	if err != nil {
		return nil, err
	}
	e.logf("loading %d documents for the index workload", n)
	err = bulkLoad(ctx, coll, n, e.cfg.clients, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "cat", Value: int32(i % categories)}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}}
	})
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}

	findByCat := func(client int) op {
		rng := clientRand(client)
		return func(ctx context.Context) error {
			cat := rng.IntN(categories)
			want := n / categories
			if cat < n%categories {
				want++
			}
			return drain(ctx, coll, bson.D{{Key: "cat", Value: int32(cat)}}, options.Find(), int64(want))
		}
	}
	scan, err := e.measure(ctx, findByCat)
	if err != nil {
		return nil, fmt.Errorf("without index: %w", err)
	}

	e.logf("building the index on cat")
	began := time.Now()
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cat", Value: 1}}})
	if err != nil {
		return nil, fmt.Errorf("create index {cat: 1} on %d documents: %w", n, err)
	}
	e.logf("index built in %v", time.Since(began).Round(time.Millisecond))

	indexed, err := e.measure(ctx, findByCat)
	if err != nil {
		return nil, fmt.Errorf("with index: %w", err)
	}
	return []result{
		{name: "find-unindexed", sample: scan},
		{name: "find-indexed", sample: indexed, ceiling: "find-unindexed"},
	}, nil
}
