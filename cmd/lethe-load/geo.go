package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The geo-near workload is a store finder at scale: --geo-docs points
// spread uniformly over the contiguous United States, a 2dsphere index on
// them, and $near queries for the ten points nearest a random place there,
// each read to its end. It reports the latency of those queries (p50 and
// p99 with the others), which the index's rings of cells keep from growing
// with the number of points.

// The box the points and the query places are drawn from, in degrees.
const (
	geoMinLng, geoMaxLng = -125.0, -67.0
	geoMinLat, geoMaxLat = 25.0, 49.0
	// geoNearLimit is how many stores a query asks for.
	geoNearLimit = 10
)

func geoPointIn(rng *rand.Rand) bson.D {
	lng := geoMinLng + rng.Float64()*(geoMaxLng-geoMinLng)
	lat := geoMinLat + rng.Float64()*(geoMaxLat-geoMinLat)
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lng, lat}}}
}

func runGeoNear(ctx context.Context, e *env) ([]result, error) {
	n := e.cfg.geoDocs
	coll := e.db.Collection("geo")
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	e.logf("loading %d points for the geo-near workload", n)
	err := bulkLoad(ctx, coll, n, e.cfg.clients, func(i int) bson.D {
		// Each point from its own number, so that every run loads the
		// same points whatever the loaders' interleaving.
		rng := rand.New(rand.NewPCG(uint64(i), 0x9e0))
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "loc", Value: geoPointIn(rng)}}
	})
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	e.logf("building the 2dsphere index")
	began := time.Now()
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "loc", Value: "2dsphere"}}}); err != nil {
		return nil, fmt.Errorf("create index {loc: \"2dsphere\"} on %d points: %w", n, err)
	}
	e.logf("index built in %v", time.Since(began).Round(time.Millisecond))
	want := int64(min(n, geoNearLimit))
	s, err := e.measure(ctx, func(client int) op {
		rng := clientRand(client)
		return func(ctx context.Context) error {
			filter := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPointIn(rng)}}}}}}
			return drain(ctx, coll, filter, options.Find().SetLimit(geoNearLimit), want)
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "geo-near", sample: s}}, nil
}
