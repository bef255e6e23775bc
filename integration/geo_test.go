package integration

import (
	"context"
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestMongoshStoreFinder runs a store finder through mongosh: $near sorted
// by distance, $geoNear with distances, $geoWithin, explain, and MongoDB's
// errors for bad GeoJSON (16755) and $near without an index (291).
func TestMongoshStoreFinder(t *testing.T) {
	runMongoshScript(t, startServer(t), "geo.js")
}

// insertGeoPoints fills test.points with n points spread over the world and
// a 2dsphere index.
func insertGeoPoints(t *testing.T, ts *testServer, n int) *mongo.Collection {
	t.Helper()
	coll := ts.Client.Database("test").Collection("points")
	ctx := testCtx(t)
	batch := make([]any, 0, 1000)
	for i := range n {
		// A Fibonacci lattice: even cover without a random source.
		lat := math.Asin(2*(float64(i)+0.5)/float64(n)-1) * 180 / math.Pi
		lng := math.Mod(float64(i)*137.50776405, 360) - 180
		batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "loc", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lng, lat}}}}})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "loc", Value: "2dsphere"}}}); err != nil {
		t.Fatal(err)
	}
	return coll
}

// TestNearAttack: $near without a bound or a limit over many points, run
// again and again under maxTimeMS, while a bystander is served; each ends
// with MaxTimeMSExpired (50) or its whole answer, and memory stays bounded.
func TestNearAttack(t *testing.T) {
	ts := startServer(t)
	insertGeoPoints(t, ts, 50000)
	attacker := ts.NewClient(t)
	db := attacker.Database("test")
	filter := bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{2.35, 48.85}}}}}}}}}
	expired, finished := 0, 0
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			err := db.RunCommand(ctx, bson.D{{Key: "find", Value: "points"}, {Key: "filter", Value: filter},
				{Key: "batchSize", Value: 100000}, {Key: "singleBatch", Value: true}, {Key: "maxTimeMS", Value: 30}}).Err()
			switch {
			case err == nil:
				finished++
			case errCode(err) == 50:
				expired++
			default:
				t.Errorf("$near: %v", err)
				return
			}
		}
	})
	t.Logf("%d unbounded $near queries expired, %d finished", expired, finished)
	if expired == 0 {
		t.Error("no $near over 50000 points ran past 30 ms: the attack did not attack")
	}
}

// TestHugePolygonAttack: $geoWithin a polygon of 100000 positions, the most
// Lethe accepts (geo.MaxVertices), again and again, while a bystander is
// served.
func TestHugePolygonAttack(t *testing.T) {
	ts := startServer(t)
	insertGeoPoints(t, ts, 5000)
	const n = 99999 // and the closing position
	ring := make(bson.A, 0, n+1)
	for i := range n {
		a := 2 * math.Pi * float64(i) / n
		ring = append(ring, bson.A{10 + 30*math.Cos(a), 20 + 30*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	filter := bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}}}}
	db := ts.NewClient(t).Database("test")
	runs := 0
	var found int64
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			raw, err := db.RunCommand(ctx, bson.D{{Key: "count", Value: "points"}, {Key: "query", Value: filter}, {Key: "maxTimeMS", Value: 20000}}).Raw()
			if err != nil && errCode(err) != 50 {
				t.Errorf("huge polygon: %v", err)
				return
			}
			if err == nil {
				found, _ = raw.Lookup("n").AsInt64OK()
			}
			runs++
		}
	})
	t.Logf("%d queries with a polygon of %d vertices, %d points inside", runs, n, found)
	if found == 0 {
		t.Error("a polygon 60 degrees across holds none of 5000 points spread over the world")
	}
}
