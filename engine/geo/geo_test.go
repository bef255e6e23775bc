package geo

import (
	"math"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

func val(t *testing.T, ext string) bsoncore.Value {
	t.Helper()
	var doc bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"v": `+ext+`}`), false, &doc); err != nil {
		t.Fatal(err)
	}
	v := doc.Lookup("v")
	return bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
}

// TestParseGeoJSON: the shapes of the GeoJSON page
// (https://www.mongodb.com/docs/manual/reference/geojson/) parse, and
// invalid ones fail with BadValue as MongoDB's geoparser does.
func TestParseGeoJSON(t *testing.T) {
	good := []string{
		`{"type": "Point", "coordinates": [40, 5]}`,
		`{"type": "LineString", "coordinates": [[40, 5], [41, 6]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]], [[2, 2], [3, 3], [4, 2], [2, 2]]]}`,
		`{"type": "MultiPoint", "coordinates": [[-73.9580, 40.8003], [-73.9498, 40.7968], [-73.9737, 40.7648], [-73.9814, 40.7681]]}`,
		`{"type": "MultiLineString", "coordinates": [[[-73.96943, 40.78519], [-73.96082, 40.78095]], [[-73.96415, 40.79229], [-73.95544, 40.78854]]]}`,
		`{"type": "MultiPolygon", "coordinates": [[[[-73.958, 40.8003], [-73.9498, 40.7968], [-73.9737, 40.7648], [-73.9814, 40.7681], [-73.958, 40.8003]]], [[[-73.958, 40.8003], [-73.9498, 40.7968], [-73.9737, 40.7648], [-73.958, 40.8003]]]]}`,
		`{"type": "GeometryCollection", "geometries": [{"type": "MultiPoint", "coordinates": [[-73.9580, 40.8003], [-73.9498, 40.7968]]}, {"type": "MultiLineString", "coordinates": [[[-73.96943, 40.78519], [-73.96082, 40.78095]]]}]}`,
		`{"type": "Polygon", "coordinates": [[[-100, 60], [-100, 0], [-100, -60], [100, -60], [100, 60], [-100, 60]]], "crs": {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}`,
	}
	for _, g := range good {
		if _, err := ParseStored(val(t, g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	bad := []string{
		`{"type": "Point", "coordinates": [200, 5]}`,
		`{"type": "Point", "coordinates": [1, 2, 3]}`,
		`{"type": "Point", "coordinates": ["a", 5]}`,
		`{"type": "Point", "coordinates": 5}`,
		`{"type": "LineString", "coordinates": [[40, 5]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [0, 0]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}`,
		`{"type": "Polygon", "coordinates": [[[0, 0], [3, 6], [6, 1], [0, 0]], [[10, 10], [11, 11], [12, 10], [10, 10]]]}`,
		`{"type": "MultiPoint", "coordinates": []}`,
		`{"type": "Square", "coordinates": [1, 2]}`,
		`{"type": "GeometryCollection", "geometries": [{"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [1, 2]}]}]}`,
		`{"type": "Point", "coordinates": [1, 2], "crs": {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}`,
	}
	for _, g := range bad {
		if _, err := ParseStored(val(t, g)); mongoerr.CodeOf(err) != mongoerr.BadValue {
			t.Errorf("%s: %v, want BadValue", g, err)
		}
	}
}

func TestLegacyPairs(t *testing.T) {
	for _, s := range []string{`[1, 2]`, `{"x": 1, "y": 2}`, `[1, 2, 3]`, `{"lng": 1, "lat": 2, "z": 0}`} {
		f, ok := LegacyPoint(val(t, s))
		if !ok || f != (Flat{1, 2}) {
			t.Errorf("%s: %v %v", s, f, ok)
		}
	}
	for _, s := range []string{`[1]`, `["a", 2]`, `5`, `{"x": 1}`} {
		if _, ok := LegacyPoint(val(t, s)); ok {
			t.Errorf("%s parsed as a pair", s)
		}
	}
	g, err := ParseStored(val(t, `[500, 2]`))
	if err != nil || g.OnSphere || !g.HasFlat {
		t.Errorf("a pair off the sphere: %+v %v", g, err)
	}
}

// TestDistances: meters on MongoDB's sphere for GeoJSON, radians for legacy
// $nearSphere, plane units for $near on 2d.
func TestDistances(t *testing.T) {
	n, err := ParseNear("$near", val(t, `{"$geometry": {"type": "Point", "coordinates": [0, 0]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := ParseStored(val(t, `{"type": "Point", "coordinates": [1, 0]}`))
	want := math.Pi / 180 * EarthRadiusMeters
	if d := n.Distance(g); math.Abs(d-want) > 1e-6 {
		t.Errorf("1 degree along the equator: %v m, want %v", d, want)
	}
	ns, _ := ParseNear("$nearSphere", val(t, `[0, 0]`), nil)
	if d := ns.Distance(g); math.Abs(d-math.Pi/180) > 1e-12 {
		t.Errorf("$nearSphere: %v radians", d)
	}
	nf, _ := ParseNear("$near", val(t, `[0, 0]`), nil)
	if d := nf.Distance(legacyGeometry(Flat{3, 4})); d != 5 {
		t.Errorf("flat: %v, want 5", d)
	}
	poly, _ := ParseStored(val(t, `{"type": "Polygon", "coordinates": [[[-1, -1], [1, -1], [1, 1], [-1, 1], [-1, -1]]]}`))
	if d := n.Distance(poly); d != 0 {
		t.Errorf("a point inside a polygon is 0 from it, got %v", d)
	}
}

// TestCells: a point's key is its cell at the finest level; a query's
// ranges hold the keys of the points inside its region.
func TestCells(t *testing.T) {
	p := DefaultParams(3)
	if p.Finest != 16 || p.Coarsest != 2 || p.MaxCells != 20 {
		// kAvgEdge's closest levels to 110 m and 2000 km, MongoDB's
		// defaults for version 3 (src/mongo/db/index/s2_common.cpp).
		t.Errorf("version 3 defaults %+v", p)
	}
	g, _ := ParseStored(val(t, `{"type": "Point", "coordinates": [-73.97, 40.77]}`))
	cells := p.Cells(g)
	if len(cells) != 1 || cells[0].Level() != 30 {
		t.Fatalf("a point's key is its leaf cell from version 3: %v", cells)
	}
	r, err := ParseWithin(val(t, `{"$centerSphere": [[-73.97, 40.77], 0.001]}`))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rg := range p.Ranges(r.Bound()) {
		if cells[0] >= rg.Lo && cells[0] <= rg.Hi {
			found = true
		}
	}
	if !found {
		t.Error("the query's ranges miss the key of a point at its center")
	}
	line, _ := ParseStored(val(t, `{"type": "LineString", "coordinates": [[-73.99, 40.73], [-73.0, 41.74]]}`))
	for _, c := range p.Cells(line) {
		if c.Level() < p.Coarsest || c.Level() > p.Finest {
			t.Errorf("cell %v of level %d outside [%d, %d]", c, c.Level(), p.Coarsest, p.Finest)
		}
	}
	if err := CheckParams(IndexParams{Finest: 10, Coarsest: 12}); mongoerr.CodeOf(err) != 16749 {
		t.Errorf("finest below coarsest: %v", err)
	}
}

// Test2dHash: the keys of points inside a box are inside the box's ranges.
func Test2dHash(t *testing.T) {
	ix, err := NewIndex(Plane, func(string) (float64, bool) { return 0, false })
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ParseWithin(val(t, `{"$box": [[-10, -10], [10, 5]]}`))
	rs, ok := ix.RegionRanges(r)
	if !ok || len(rs) == 0 || len(rs) > maxRanges {
		t.Fatalf("ranges %v %v", rs, ok)
	}
	for _, f := range []Flat{{-10, -10}, {0, 0}, {9.99, 4.99}, {-3, 2}} {
		k, err := ix.hash(f)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for _, rg := range rs {
			in = in || k >= rg.Lo && k <= rg.Hi
		}
		if !in {
			t.Errorf("key of %v outside the box's ranges", f)
		}
	}
	if _, err := ix.hash(Flat{180, 0}); mongoerr.CodeOf(err) != 13027 {
		t.Errorf("a point at max: %v, want 13027", err)
	}
}

func TestBigPolygonContains(t *testing.T) {
	r, err := ParseWithin(val(t, `{"$geometry": {"type": "Polygon", "coordinates": [[[-100, 60], [-100, 0], [-100, -60], [100, -60], [100, 60], [-100, 60]]], "crs": {"type": "name", "properties": {"name": "urn:x-mongodb:crs:strictwinding:EPSG:4326"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// The ring runs south on the west side: its left is the 200-degree wide
	// band through longitude 0.
	in := &Geometry{Points: []s2.Point{pointOf(0, 0)}, OnSphere: true}
	out := &Geometry{Points: []s2.Point{pointOf(180, 0)}, OnSphere: true}
	if !r.Within(in) || r.Within(out) {
		t.Errorf("big polygon: (0,0) within %v, (180,0) within %v", r.Within(in), r.Within(out))
	}
}

// TestMaxVertices: a shape of more positions than Lethe accepts is
// refused before any is parsed.
func TestMaxVertices(t *testing.T) {
	if _, err := ParseWithin(circle(t, MaxVertices-1)); err != nil {
		t.Fatalf("a polygon of %d positions: %v", MaxVertices, err)
	}
	if _, err := ParseWithin(circle(t, MaxVertices)); mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Fatalf("a polygon of %d positions: %v, want BadValue", MaxVertices+1, err)
	}
}

// Test2dKeysOnlyPairs: a 2d index keys legacy pairs and arrays of them,
// and refuses GeoJSON (13026) and scalars (16804) as MongoDB's does.
func Test2dKeysOnlyPairs(t *testing.T) {
	ix, _ := NewIndex(Plane, func(string) (float64, bool) { return 0, false })
	for _, s := range []string{`[1, 2]`, `{"x": 1, "y": 2}`, `[[1, 2], [3, 4]]`} {
		if _, err := ix.Keys([]bsoncore.Value{val(t, s)}); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for s, code := range map[string]mongoerr.Code{`{"type": "Point", "coordinates": [1, 2]}`: 13026, `"here"`: 16804, `[[1, 2], "x"]`: 13026} {
		if _, err := ix.Keys([]bsoncore.Value{val(t, s)}); mongoerr.CodeOf(err) != code {
			t.Errorf("%s: %v, want %d", s, err, code)
		}
	}
}

// TestHugeShapesMeet: a query polygon of the most positions Lethe accepts
// tested against a document line of many vertices costs the line's edges
// times a logarithm, not the product of both (which took minutes).
func TestHugeShapesMeet(t *testing.T) {
	r, err := ParseWithin(circle(t, MaxVertices-1))
	if err != nil {
		t.Fatal(err)
	}
	ri, err := ParseIntersects(circle(t, MaxVertices-1))
	if err != nil {
		t.Fatal(err)
	}
	line := make(s2.Polyline, 0, 20000)
	for i := range 20000 {
		// From inside the circle (centre 10, 20, radius 30) to outside it.
		line = append(line, pointOf(10+float64(i)*0.003, 20))
	}
	g := &Geometry{Lines: []*s2.Polyline{&line}, OnSphere: true}
	start := time.Now()
	if r.Within(g) {
		t.Error("a line leaving the polygon is within it")
	}
	if !ri.Intersects(g) {
		t.Error("a line leaving the polygon does not intersect it")
	}
	t.Logf("within and intersects of a %d-vertex line and a %d-vertex polygon: %v", len(line), MaxVertices, time.Since(start))
}
