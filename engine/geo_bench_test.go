package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkNearExpiring measures how long an unbounded $near over 50000
// points spread over the world takes to notice a 30 ms deadline.
func BenchmarkNearExpiring(b *testing.B) {
	e := openTestEngine(b)
	ctx := context.Background()
	const n = 50000
	var docs []bson.Raw
	for i := range n {
		lat := math.Asin(2*(float64(i)+0.5)/n-1) * 180 / math.Pi
		lng := math.Mod(float64(i)*137.50776405, 360) - 180
		raw, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "loc", Value: geoPoint(lng, lat)}})
		docs = append(docs, raw)
	}
	if _, err := e.Insert(ctx, "geo", "pts", docs, true); err != nil {
		b.Fatal(err)
	}
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}}}})
	if _, err := e.CreateIndexes(ctx, "geo", "pts", []bson.Raw{spec}); err != nil {
		b.Fatal(err)
	}
	near, _ := bson.Marshal(bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(2.35, 48.85)}}}}}})
	for b.Loop() {
		start := time.Now()
		qctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		_, err := e.Find(qctx, "geo", "pts", FindSpec{Filter: near})
		cancel()
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/query")
		if err == nil {
			b.Log("finished within 30 ms")
		}
	}
}

// BenchmarkNearLimit10 measures a store finder's $near for the ten nearest
// of 200000 points spread over the contiguous United States.
func BenchmarkNearLimit10(b *testing.B) {
	e := openTestEngine(b)
	ctx := context.Background()
	const n = 200000
	rng := rand.New(rand.NewPCG(3, 4))
	var docs []bson.Raw
	for i := range n {
		raw, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "loc", Value: geoPoint(-125+58*rng.Float64(), 25+24*rng.Float64())}})
		docs = append(docs, raw)
		if len(docs) == 10000 {
			if _, err := e.Insert(ctx, "geo", "pts", docs, true); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}}}})
	if _, err := e.CreateIndexes(ctx, "geo", "pts", []bson.Raw{spec}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		near, _ := bson.Marshal(bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(-125+58*rng.Float64(), 25+24*rng.Float64())}}}}}})
		cur, err := e.Find(ctx, "geo", "pts", FindSpec{Filter: near, Limit: 10})
		if err != nil {
			b.Fatal(err)
		}
		if docs, err := cur.All(ctx); err != nil || len(docs) != 10 {
			b.Fatal(len(docs), err)
		}
	}
}
