package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
)

func geoPoint(lng, lat float64) bson.D {
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lng, lat}}}
}

// loadPoints fills db.coll with n random points around New York and a
// 2dsphere index on loc.
func loadPoints(t *testing.T, e *Engine, coll string, n int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var docs []bson.Raw
	for i := range n {
		docs = append(docs, mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "loc", Value: geoPoint(-74+rng.Float64(), 40+rng.Float64())}}))
	}
	if res, err := e.Insert(ctx, "geo", coll, docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	if _, err := e.CreateIndexes(ctx, "geo", coll, []bson.Raw{mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}}}})}); err != nil {
		t.Fatal(err)
	}
}

// TestGeoIndexRefusesBadGeoJSON: a document whose indexed field is not
// valid GeoJSON is refused with 16755, and an index build over one fails
// the same way (https://www.mongodb.com/docs/manual/core/indexes/index-types/geospatial/2dsphere/:
// "MongoDB does not add an entry" only for missing, null or empty fields).
func TestGeoIndexRefusesBadGeoJSON(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}}}})
	if _, err := e.CreateIndexes(ctx, "geo", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	ok := []bson.Raw{
		mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "loc", Value: geoPoint(1, 2)}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 2}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 3}, {Key: "loc", Value: nil}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 4}, {Key: "loc", Value: bson.A{5, 6}}}),
	}
	if res, err := e.Insert(ctx, "geo", "c", ok, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	for i, loc := range []any{
		geoPoint(200, 0),
		bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{"a", 1}}},
		bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{bson.A{0, 0}, bson.A{1, 1}, bson.A{0, 1}}}}},
		bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{bson.A{0, 0}, bson.A{1, 1}, bson.A{1, 0}, bson.A{0, 1}, bson.A{0, 0}}}}},
		"not a place",
	} {
		doc := mustRaw(t, bson.D{{Key: "_id", Value: 10 + i}, {Key: "loc", Value: loc}})
		res, err := e.Insert(ctx, "geo", "c", []bson.Raw{doc}, true)
		if err == nil && len(res.Errors) == 1 {
			err = res.Errors[0].Err
		}
		if mongoerr.CodeOf(err) != 16755 {
			t.Errorf("insert %v: %v, want code 16755", loc, err)
		}
	}
	bad := mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "loc", Value: geoPoint(0, 100)}})
	if _, err := e.Insert(ctx, "geo", "d", []bson.Raw{bad}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateIndexes(ctx, "geo", "d", []bson.Raw{spec}); mongoerr.CodeOf(err) != 16755 {
		t.Errorf("index build over a bad document: %v, want 16755", err)
	}
	specs, err := e.ListIndexes(ctx, "geo", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(specs[len(specs)-1]); !strings.Contains(got, `"2dsphereIndexVersion":{"$numberInt":"3"}`) {
		t.Errorf("listIndexes: %s, want 2dsphereIndexVersion 3 as MongoDB lists it", got)
	}
}

// TestGeoPlans: $geoWithin scans the 2dsphere index's ranges, not every
// key, and $near reads GEO_NEAR_2DSPHERE (explain, as MongoDB names it).
func TestGeoPlans(t *testing.T) {
	e := openTestEngine(t)
	loadPoints(t, e, "pts", 2000)
	ctx := context.Background()
	within := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{-73.5, 40.5}, 5.0 / 6378.1}}}}}}})
	ex, err := e.Explain(ctx, "geo", "pts", FindSpec{Filter: within}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Stage != "IXSCAN" || ex.IndexName != "loc_2dsphere" {
		t.Errorf("$geoWithin plan %s %s, want IXSCAN loc_2dsphere", ex.Stage, ex.IndexName)
	}
	if ex.KeysExam >= 200 || ex.NReturned == 0 {
		t.Errorf("$geoWithin examined %d keys for %d results of 2000 points", ex.KeysExam, ex.NReturned)
	}
	near := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(-73.5, 40.5)}}}}}})
	ex, err = e.Explain(ctx, "geo", "pts", FindSpec{Filter: near, Limit: 5}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Stage != "GEO_NEAR_2DSPHERE" || ex.NReturned != 5 || ex.KeysExam >= 500 {
		t.Errorf("$near plan %s returned %d examining %d keys, want GEO_NEAR_2DSPHERE, 5, a few rings", ex.Stage, ex.NReturned, ex.KeysExam)
	}
}

// TestNearMatchesBruteForce: the nearest documents by the rings of cells
// are the nearest by measuring every document.
func TestNearMatchesBruteForce(t *testing.T) {
	e := openTestEngine(t)
	loadPoints(t, e, "pts", 3000)
	for _, c := range []struct {
		lng, lat float64
		limit    int64
	}{{-73.5, 40.5, 10}, {-74.2, 39.9, 20}, {-73.01, 40.99, 1}, {-50, 10, 3}, {100, -40, 5}} {
		near := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(c.lng, c.lat)}}}}}})
		got, err := e.findIDsIn(context.Background(), "geo", "pts", near, nil, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		all, err := e.findIDsIn(context.Background(), "geo", "pts", near, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 3000 {
			t.Fatalf("unbounded $near returned %d of 3000", len(all))
		}
		if fmt.Sprint(got) != fmt.Sprint(all[:c.limit]) {
			t.Errorf("near %v limit %d: %v, want %v", c, c.limit, got, all[:c.limit])
		}
	}
}

// TestNearChecksContext: a $near stops when its deadline passes.
func TestNearChecksContext(t *testing.T) {
	e := openTestEngine(t)
	loadPoints(t, e, "pts", 3000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	near := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(-73.5, 40.5)}}}}}})
	if _, err := e.Find(ctx, "geo", "pts", FindSpec{Filter: near}); err == nil {
		t.Error("$near past its deadline succeeded")
	}
}

// Test2dIndex: a 2d index refuses points outside its bounds (13027, as
// MongoDB: https://www.mongodb.com/docs/manual/core/indexes/index-types/geospatial/2d/create/
// "point not in interval"), honours min and max, and serves $box and $near
// by ranges of its hashes.
func Test2dIndex(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "2d"}}}, {Key: "min", Value: -1000}, {Key: "max", Value: 1000}, {Key: "bits", Value: 20}})
	if _, err := e.CreateIndexes(ctx, "geo", "flat", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	for i := range 1000 {
		docs = append(docs, mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "p", Value: bson.A{float64(i%40) * 20, float64(i/40) * 20}}}))
	}
	if res, err := e.Insert(ctx, "geo", "flat", docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	bad := mustRaw(t, bson.D{{Key: "_id", Value: "far"}, {Key: "p", Value: bson.A{2000, 0}}})
	res, err := e.Insert(ctx, "geo", "flat", []bson.Raw{bad}, true)
	if err == nil && len(res.Errors) == 1 {
		err = res.Errors[0].Err
	}
	if mongoerr.CodeOf(err) != 13027 {
		t.Errorf("a point past max: %v, want 13027", err)
	}
	box := mustRaw(t, bson.D{{Key: "p", Value: bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$box", Value: bson.A{bson.A{100, 100}, bson.A{160, 160}}}}}}}})
	ex, err := e.Explain(ctx, "geo", "flat", FindSpec{Filter: box}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Stage != "IXSCAN" || ex.NReturned != 16 || ex.KeysExam > 200 {
		t.Errorf("$box: %s returned %d examining %d keys, want IXSCAN, 16, few", ex.Stage, ex.NReturned, ex.KeysExam)
	}
	near := mustRaw(t, bson.D{{Key: "p", Value: bson.D{{Key: "$near", Value: bson.A{400, 200}}}}})
	ex, err = e.Explain(ctx, "geo", "flat", FindSpec{Filter: near, Limit: 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Stage != "GEO_NEAR_2D" || ex.NReturned != 3 || ex.KeysExam > 300 {
		t.Errorf("$near: %s returned %d examining %d keys", ex.Stage, ex.NReturned, ex.KeysExam)
	}
	got, err := e.findIDsIn(context.Background(), "geo", "flat", near, nil, 1)
	if err != nil || len(got) != 1 || got[0] != string(keycodec.Append(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 420)})) {
		t.Errorf("nearest to (400, 200): %q %v", got, err)
	}
}

// TestGeoNearMissingCollection: $geoNear on a collection that does not
// exist is NamespaceNotFound, as mongod's pipeline_d.cpp asserts ("$geoNear
// requires a geo index to run, but <ns> does not exist"), not an empty
// answer. Found by the model test.
func TestGeoNearMissingCollection(t *testing.T) {
	e := openTestEngine(t)
	stage := mustRaw(t, bson.D{{Key: "$geoNear", Value: bson.D{{Key: "near", Value: geoPoint(-73.5, 40.5)}, {Key: "distanceField", Value: "d"}, {Key: "spherical", Value: true}}}})
	docs, err := e.Aggregate(context.Background(), "geo", "nope", []bson.Raw{stage}, AggregateOptions{})
	if mongoerr.CodeOf(err) != mongoerr.NamespaceNotFound {
		t.Errorf("$geoNear on a missing collection: %v %v, want NamespaceNotFound", docs, err)
	}
}

// TestGeoNearNoPlan: a $geoNear whose key has no geo index, or whose
// only geo index is hidden, fails as the near query on that field does in
// mongod (pipeline_d.cpp takes the key as given, and a hidden index still
// names the field), with 291, not BadValue or IndexNotFound. Found by the
// model test.
func TestGeoNearNoPlan(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	loadPoints(t, e, "pts", 10)
	stage := func(key string) bson.Raw {
		spec := bson.D{{Key: "near", Value: geoPoint(-73.5, 40.5)}, {Key: "distanceField", Value: "d"}, {Key: "spherical", Value: true}}
		if key != "" {
			spec = append(spec, bson.E{Key: "key", Value: key})
		}
		return mustRaw(t, bson.D{{Key: "$geoNear", Value: spec}})
	}
	if _, err := e.Aggregate(ctx, "geo", "pts", []bson.Raw{stage("elsewhere")}, AggregateOptions{}); mongoerr.CodeOf(err) != noQueryExecutionPlans {
		t.Errorf("$geoNear on an unindexed key: %v, want 291", err)
	}
	hide := true
	if _, err := e.CollModIndex(ctx, "geo", "pts", IndexChange{Name: "loc_2dsphere", Hidden: &hide}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "loc"} {
		if _, err := e.Aggregate(ctx, "geo", "pts", []bson.Raw{stage(key)}, AggregateOptions{}); mongoerr.CodeOf(err) != noQueryExecutionPlans {
			t.Errorf("$geoNear (key %q) with its index hidden: %v, want 291", key, err)
		}
	}
}

// TestGeoNearQueryCollation: the query of a $geoNear compares strings
// under the aggregation's collation, as every filter of a command that
// names one does (MongoDB's collation page: "operations that support
// collation" include aggregate); under {locale: "en", strength: 2} a
// query on "x" finds "X".
func TestGeoNearQueryCollation(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	docs := []bson.Raw{
		mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "X"}, {Key: "loc", Value: geoPoint(0, 0)}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: "y"}, {Key: "loc", Value: geoPoint(0, 1)}}),
	}
	if _, err := e.Insert(ctx, "geo", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateIndexes(ctx, "geo", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}}}, {Key: "name", Value: "loc_2dsphere"}})}); err != nil {
		t.Fatal(err)
	}
	stage := mustRaw(t, bson.D{{Key: "$geoNear", Value: bson.D{{Key: "near", Value: geoPoint(0, 0)}, {Key: "distanceField", Value: "d"}, {Key: "spherical", Value: true}, {Key: "query", Value: bson.D{{Key: "a", Value: "x"}}}}}})
	ci := WithCollation(ctx, mustRaw(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}}))
	got, err := e.Aggregate(ci, "geo", "c", []bson.Raw{stage}, AggregateOptions{})
	if err != nil || len(got) != 1 || got[0].Lookup("_id").Int32() != 1 {
		t.Errorf("$geoNear query {a: \"x\"} under a case-insensitive collation: %v %v, want the document with \"X\"", got, err)
	}
}

// TestExplainGeoNear: the explain of a $geoNear pipeline names the near
// scan of the 2dsphere index, as MongoDB's GEO_NEAR_2DSPHERE.
func TestExplainGeoNear(t *testing.T) {
	e := openTestEngine(t)
	loadPoints(t, e, "pts", 100)
	stage := mustRaw(t, bson.D{{Key: "$geoNear", Value: bson.D{{Key: "near", Value: geoPoint(-73.5, 40.5)}, {Key: "distanceField", Value: "d"}}}})
	limit := mustRaw(t, bson.D{{Key: "$limit", Value: 3}})
	ex, err := e.ExplainAggregate(context.Background(), "geo", "pts", []bson.Raw{stage, limit}, nil, AggregateOptions{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Cursor == nil || ex.Cursor.Stage != "GEO_NEAR_2DSPHERE" || ex.Cursor.IndexName != "loc_2dsphere" || !ex.Executed || ex.Cursor.NReturned != 3 {
		t.Errorf("explain: %+v", ex.Cursor)
	}
}

// TestNearMemoryLimit: an unbounded $near holds what it has found within
// the sort's memory limit and fails past it with MongoDB's
// QueryExceededMemoryLimitNoDiskUseAllowed (292), as a blocking sort does.
func TestNearMemoryLimit(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := Open(t.TempDir(), Options{Clock: clk, NoReaper: true, SortMemoryLimit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	loadPoints(t, e, "pts", 3000)
	near := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(-73.5, 40.5)}}}}}})
	if _, err := e.Find(context.Background(), "geo", "pts", FindSpec{Filter: near}); mongoerr.CodeOf(err) != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed {
		t.Errorf("unbounded $near over 3000 points in 64 KiB: %v, want 292", err)
	}
	// Under a limit, the rings stop long before, and hold only the nearest
	// found so far even when they grow to read every point, from the other
	// side of the world.
	if _, err := e.Find(context.Background(), "geo", "pts", FindSpec{Filter: near, Limit: 10}); err != nil {
		t.Errorf("$near limit 10 in 64 KiB: %v", err)
	}
	far := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(100, -40)}}}}}})
	got, err := e.findIDsIn(context.Background(), "geo", "pts", far, nil, 10)
	if err != nil || len(got) != 10 {
		t.Fatalf("$near limit 10 from far away in 64 KiB: %d %v", len(got), err)
	}
}

// TestNearWrites: deleteOne with $near deletes the nearest document, as
// MongoDB's writes read through the near plan; without a geo index the
// write fails with 291 like the query.
func TestNearWrites(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	loadPoints(t, e, "pts", 500)
	near := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(-73.5, 40.5)}}}}}})
	before, err := e.findIDsIn(context.Background(), "geo", "pts", near, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := e.Delete(ctx, "geo", "pts", near, 1, bson.RawValue{}); err != nil || n != 1 {
		t.Fatalf("deleteOne: %d %v", n, err)
	}
	after, err := e.findIDsIn(context.Background(), "geo", "pts", near, nil, 1)
	if err != nil || len(after) != 1 || after[0] != before[1] {
		t.Errorf("after deleting the nearest, the nearest is %q, want the second %q (%v)", after, before[1], err)
	}
	plain := mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "loc", Value: geoPoint(0, 0)}})
	if _, err := e.Insert(ctx, "geo", "plain", []bson.Raw{plain}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(ctx, "geo", "plain", near, 1, bson.RawValue{}); mongoerr.CodeOf(err) != 291 {
		t.Errorf("deleteOne with $near and no index: %v, want 291", err)
	}
}

// TestValidateGeoIndexes: validate finds a 2dsphere and a 2d index's
// entries exactly those their documents make, polygons and lines included.
func TestValidateGeoIndexes(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	docs := []bson.Raw{
		mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "loc", Value: geoPoint(1, 2)}, {Key: "p", Value: bson.A{1, 2}}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "loc", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{bson.A{bson.A{0, 0}, bson.A{3, 6}, bson.A{6, 1}, bson.A{0, 0}}}}}}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 3}, {Key: "loc", Value: bson.D{{Key: "type", Value: "LineString"}, {Key: "coordinates", Value: bson.A{bson.A{0, 0}, bson.A{30, 40}}}}}, {Key: "p", Value: bson.A{bson.A{3, 4}, bson.A{5, 6}}}}),
	}
	if res, err := e.Insert(ctx, "geo", "v", docs, true); err != nil || len(res.Errors) > 0 {
		t.Fatal(err, res.Errors)
	}
	specs := []bson.Raw{
		mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "loc", Value: "2dsphere"}, {Key: "_id", Value: 1}}}}),
		mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "p", Value: "2d"}}}}),
	}
	if _, err := e.CreateIndexes(ctx, "geo", "v", specs); err != nil {
		t.Fatal(err)
	}
	res, err := e.Validate(ctx, "geo", "v", true)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Errorf("validate: %+v", res)
	}
}

// TestNearCount: count with $near counts the documents within its bounds
// through any plan, and needs the geo index (291) as the query does.
func TestNearCount(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	loadPoints(t, e, "pts", 500)
	within := mustRaw(t, bson.D{{Key: "loc", Value: bson.D{{Key: "$near", Value: bson.D{{Key: "$geometry", Value: geoPoint(-73.5, 40.5)}, {Key: "$maxDistance", Value: 20000}}}}}})
	n, err := e.Count(ctx, "geo", "pts", within, 0, 0, bson.RawValue{})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := e.findIDs("geo", "pts", within, nil)
	if err != nil || int64(len(ids)) != n || n == 0 {
		t.Errorf("count %d, find %d (%v)", n, len(ids), err)
	}
	plain := mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "loc", Value: geoPoint(0, 0)}})
	if _, err := e.Insert(ctx, "geo", "plain", []bson.Raw{plain}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Count(ctx, "geo", "plain", within, 0, 0, bson.RawValue{}); mongoerr.CodeOf(err) != 291 {
		t.Errorf("count with $near and no index: %v, want 291", err)
	}
}
