package geo

import (
	"math"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/mongoerr"
)

// EarthRadiusMeters is the radius MongoDB takes for the earth when it turns
// angles into meters (its kRadiusOfEarthInMeters).
const EarthRadiusMeters = 6378100.0

// strictWindingCRS names the coordinate system of MongoDB's "big polygons":
// the polygon is the region to the left of its exterior loop, which may be
// larger than a hemisphere.
const strictWindingCRS = "urn:x-mongodb:crs:strictwinding:EPSG:4326"

// The coordinate systems a GeoJSON crs member may name; the first two are
// the default one.
var defaultCRSNames = map[string]bool{"EPSG:4326": true, "urn:ogc:def:crs:OGC:1.3:CRS84": true}

// Flat is a point of the plane: a legacy pair as given (x first).
type Flat struct{ X, Y float64 }

// Geometry is a parsed shape: its parts on the sphere and, for legacy
// coordinate pairs, the pair as given on the plane.
type Geometry struct {
	// Type is the GeoJSON type, or "legacy" for a coordinate pair.
	Type   string
	Points []s2.Point
	Lines  []*s2.Polyline
	Polys  []*s2.Polygon
	// Flat is the plane point of a legacy pair or a GeoJSON Point, which
	// MongoDB projects onto the plane for the flat operators.
	Flat    Flat
	HasFlat bool
	// OnSphere is false for a legacy pair whose coordinates are not a
	// longitude and a latitude: it exists only on the plane.
	OnSphere bool
	// Big is set for a polygon in the strict-winding coordinate system.
	Big bool
}

// IsPoint reports whether g is a single point.
func (g *Geometry) IsPoint() bool {
	return len(g.Points) == 1 && len(g.Lines) == 0 && len(g.Polys) == 0 || !g.OnSphere && g.HasFlat
}

// badValue is a parse error of a query's geometry, MongoDB's BadValue.
func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}

// ParseStored parses what a document holds in a geo field: a GeoJSON object
// or a legacy pair (an array or a document of two numbers). isGeo is false
// for values that are neither, which a query does not match and a 2dsphere
// index refuses; err explains what is wrong with a GeoJSON object.
func ParseStored(v bsoncore.Value) (g *Geometry, err error) {
	if v.Type == bsoncore.TypeEmbeddedDocument {
		if t, ok := bsonvalue.Lookup(v.Data, "type"); ok && t.Type == bsoncore.TypeString {
			if _, hasCoords := bsonvalue.Lookup(v.Data, "coordinates"); hasCoords || t.StringValue() == "GeometryCollection" {
				return ParseGeoJSON(v.Data)
			}
		}
	}
	if f, ok := LegacyPoint(v); ok {
		return legacyGeometry(f), nil
	}
	return nil, badValue("geo element must be an array or object: %s", describe(v))
}

func describe(v bsoncore.Value) string {
	return v.String()
}

// legacyGeometry is the geometry of a legacy pair: on the plane always, and
// on the sphere when its coordinates are a longitude and a latitude.
func legacyGeometry(f Flat) *Geometry {
	g := &Geometry{Type: "legacy", Flat: f, HasFlat: true}
	if validLngLat(f.X, f.Y) {
		g.Points = []s2.Point{pointOf(f.X, f.Y)}
		g.OnSphere = true
	}
	return g
}

// LegacyPoint reads a legacy coordinate pair: an array or document whose
// first two values are numbers (more values are ignored, as MongoDB does).
func LegacyPoint(v bsoncore.Value) (Flat, bool) {
	var vals []bsoncore.Value
	switch v.Type {
	case bsoncore.TypeArray:
		vals, _ = bsoncore.Array(v.Data).Values()
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := bsoncore.Document(v.Data).Elements()
		for _, el := range elems {
			vals = append(vals, el.Value())
		}
	default:
		return Flat{}, false
	}
	if len(vals) < 2 {
		return Flat{}, false
	}
	x, ok1 := number(vals[0])
	y, ok2 := number(vals[1])
	if !ok1 || !ok2 || math.IsNaN(x) || math.IsNaN(y) {
		return Flat{}, false
	}
	return Flat{x, y}, true
}

func number(v bsoncore.Value) (float64, bool) {
	switch v.Type {
	case bsoncore.TypeDouble:
		return v.Double(), true
	case bsoncore.TypeInt32:
		return float64(v.Int32()), true
	case bsoncore.TypeInt64:
		return float64(v.Int64()), true
	case bsoncore.TypeDecimal128:
		r, ok := bsonvalue.DecimalRat(v)
		if !ok {
			return 0, false
		}
		f, _ := r.Float64()
		return f, true
	}
	return 0, false
}

func validLngLat(lng, lat float64) bool {
	return lng >= -180 && lng <= 180 && lat >= -90 && lat <= 90
}

func pointOf(lng, lat float64) s2.Point {
	return s2.PointFromLatLng(s2.LatLngFromDegrees(lat, lng))
}

// MaxVertices is the most positions one GeoJSON object may have. MongoDB
// has no such limit beyond the size of a document; Lethe has one because
// checking and indexing a shape costs about a microsecond and a kilobyte of
// memory per vertex: a 16 MB polygon would hold a request for seconds and
// the heap for half a gigabyte.
const MaxVertices = 100000

// ParseGeoJSON parses and validates a GeoJSON object, as MongoDB's
// geoparser does, with its messages; errors are BadValue.
func ParseGeoJSON(doc []byte) (*Geometry, error) {
	if n := countPositions(bsoncore.Document(doc), 0); n > MaxVertices {
		return nil, badValue("GeoJSON object has %d positions, more than the %d Lethe accepts", n, MaxVertices)
	}
	return parseGeoJSON(doc)
}

// countPositions counts the positions (arrays of numbers) in the
// coordinates and geometries of a GeoJSON object, before any is parsed.
func countPositions(doc bsoncore.Document, depth int) int {
	if depth > 4 {
		return 0
	}
	n := 0
	if c, ok := bsonvalue.Lookup(doc, "coordinates"); ok && c.Type == bsoncore.TypeArray {
		n += countArrayPositions(c.Data, 0)
	}
	if g, ok := bsonvalue.Lookup(doc, "geometries"); ok && g.Type == bsoncore.TypeArray {
		vals, _ := bsoncore.Array(g.Data).Values()
		for _, v := range vals {
			if v.Type == bsoncore.TypeEmbeddedDocument {
				n += countPositions(v.Data, depth+1)
			}
		}
	}
	return n
}

func countArrayPositions(arr []byte, depth int) int {
	vals, _ := bsoncore.Array(arr).Values()
	if len(vals) == 0 || depth > 4 {
		return 0
	}
	if vals[0].Type != bsoncore.TypeArray {
		return 1
	}
	n := 0
	for _, v := range vals {
		if v.Type == bsoncore.TypeArray {
			n += countArrayPositions(v.Data, depth+1)
		}
	}
	return n
}

func parseGeoJSON(doc []byte) (*Geometry, error) {
	tv, ok := bsonvalue.Lookup(doc, "type")
	if !ok || tv.Type != bsoncore.TypeString {
		return nil, badValue("unknown GeoJSON type: %s", bsoncore.Document(doc))
	}
	typ := tv.StringValue()
	g := &Geometry{Type: typ, OnSphere: true}
	big := false
	if crs, ok := bsonvalue.Lookup(doc, "crs"); ok {
		var err error
		if big, err = parseCRS(crs); err != nil {
			return nil, err
		}
		if big && typ != "Polygon" {
			return nil, badValue("strict winding order is only supported by Polygon")
		}
	}
	if typ == "GeometryCollection" {
		return parseCollection(doc)
	}
	cv, ok := bsonvalue.Lookup(doc, "coordinates")
	if !ok || cv.Type != bsoncore.TypeArray {
		return nil, badValue("coordinates must be an array")
	}
	coords := cv
	var err error
	switch typ {
	case "Point":
		var p s2.Point
		var f Flat
		if p, f, err = parsePosition(coords); err == nil {
			g.Points, g.Flat, g.HasFlat = []s2.Point{p}, f, true
		}
	case "LineString":
		var l *s2.Polyline
		if l, err = parseLine(coords); err == nil {
			g.Lines = []*s2.Polyline{l}
		}
	case "Polygon":
		var p *s2.Polygon
		if p, err = parsePolygon(coords, big); err == nil {
			g.Polys, g.Big = []*s2.Polygon{p}, big
		}
	case "MultiPoint":
		err = eachElement(coords, "MultiPoint coordinates must contain at least one element", func(v bsoncore.Value) error {
			p, _, err := parsePosition(v)
			g.Points = append(g.Points, p)
			return err
		})
	case "MultiLineString":
		err = eachElement(coords, "MultiLineString coordinates must contain at least one element", func(v bsoncore.Value) error {
			l, err := parseLine(v)
			g.Lines = append(g.Lines, l)
			return err
		})
	case "MultiPolygon":
		err = eachElement(coords, "MultiPolygon coordinates must contain at least one element", func(v bsoncore.Value) error {
			p, err := parsePolygon(v, false)
			g.Polys = append(g.Polys, p)
			return err
		})
	default:
		return nil, badValue("unknown GeoJSON type: %s", bsoncore.Document(doc))
	}
	if err != nil {
		return nil, err
	}
	return g, nil
}

// parseCRS reads a crs member: the default system or the strict-winding one
// (big is set).
func parseCRS(v bsoncore.Value) (big bool, err error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return false, badValue("GeoJSON CRS must be an object")
	}
	if t, _ := bsonvalue.Lookup(v.Data, "type"); t.Type != bsoncore.TypeString || t.StringValue() != "name" {
		return false, badValue("GeoJSON CRS must have field \"type\": \"name\"")
	}
	props, _ := bsonvalue.Lookup(v.Data, "properties")
	if props.Type != bsoncore.TypeEmbeddedDocument {
		return false, badValue("CRS must have field \"properties\" which is an object")
	}
	name, _ := bsonvalue.Lookup(props.Data, "name")
	if name.Type != bsoncore.TypeString {
		return false, badValue("In CRS, \"properties.name\" must be a string")
	}
	switch s := name.StringValue(); {
	case s == strictWindingCRS:
		return true, nil
	case defaultCRSNames[s]:
		return false, nil
	default:
		return false, badValue("Unknown CRS name: %s", s)
	}
}

func parseCollection(doc []byte) (*Geometry, error) {
	gv, ok := bsonvalue.Lookup(doc, "geometries")
	if !ok || gv.Type != bsoncore.TypeArray {
		return nil, badValue("GeometryCollection geometries must be an array")
	}
	g := &Geometry{Type: "GeometryCollection", OnSphere: true}
	err := eachElement(gv, "GeometryCollection geometries must contain at least one geometry", func(v bsoncore.Value) error {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return badValue("Element %s of \"geometries\" is not an object", describe(v))
		}
		sub, err := parseGeoJSON(v.Data)
		if err != nil {
			return err
		}
		if sub.Type == "GeometryCollection" {
			return badValue("GeometryCollections cannot be nested")
		}
		g.Points = append(g.Points, sub.Points...)
		g.Lines = append(g.Lines, sub.Lines...)
		g.Polys = append(g.Polys, sub.Polys...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

func eachElement(arr bsoncore.Value, emptyMsg string, fn func(bsoncore.Value) error) error {
	vals, err := bsoncore.Array(arr.Data).Values()
	if err != nil {
		return badValue("invalid array: %v", err)
	}
	if len(vals) == 0 {
		return badValue("%s", emptyMsg)
	}
	for _, v := range vals {
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// parsePosition reads a GeoJSON position [lng, lat].
func parsePosition(v bsoncore.Value) (s2.Point, Flat, error) {
	if v.Type != bsoncore.TypeArray {
		return s2.Point{}, Flat{}, badValue("GeoJSON coordinates must be an array of coordinates")
	}
	vals, _ := bsoncore.Array(v.Data).Values()
	if len(vals) != 2 {
		return s2.Point{}, Flat{}, badValue("Point must only contain two numeric elements")
	}
	lng, ok1 := number(vals[0])
	lat, ok2 := number(vals[1])
	if !ok1 || !ok2 {
		return s2.Point{}, Flat{}, badValue("Point must only contain numeric elements")
	}
	if !validLngLat(lng, lat) {
		return s2.Point{}, Flat{}, badValue("longitude/latitude is out of bounds, lng: %v lat: %v", lng, lat)
	}
	return pointOf(lng, lat), Flat{lng, lat}, nil
}

func parsePositions(v bsoncore.Value) ([]s2.Point, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("GeoJSON coordinates must be an array of coordinates")
	}
	vals, _ := bsoncore.Array(v.Data).Values()
	pts := make([]s2.Point, 0, len(vals))
	for _, e := range vals {
		p, _, err := parsePosition(e)
		if err != nil {
			return nil, err
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// parseLine reads a LineString's positions: at least two, and no edge
// between identical or antipodal vertices.
func parseLine(v bsoncore.Value) (*s2.Polyline, error) {
	pts, err := parsePositions(v)
	if err != nil {
		return nil, err
	}
	pts = dropRepeats(pts)
	if len(pts) < 2 {
		return nil, badValue("GeoJSON LineString must have at least 2 vertices: %s", describe(v))
	}
	l := s2.Polyline(pts)
	if err := l.Validate(); err != nil {
		return nil, badValue("GeoJSON LineString is not valid: %v", err)
	}
	return &l, nil
}

// dropRepeats removes consecutive duplicate vertices, which MongoDB
// tolerates in lines and loops.
func dropRepeats(pts []s2.Point) []s2.Point {
	out := pts[:0:0]
	for i, p := range pts {
		if i > 0 && p == pts[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// parsePolygon reads a Polygon's loops: closed, at least three distinct
// vertices, no self-crossing, holes inside the first loop and apart from
// each other. A loop larger than a hemisphere is taken as its complement
// unless big (strict winding) is set.
func parsePolygon(v bsoncore.Value, big bool) (*s2.Polygon, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("Polygon coordinates must be an array")
	}
	rings, _ := bsoncore.Array(v.Data).Values()
	if len(rings) == 0 {
		return nil, badValue("Polygon has no loops.")
	}
	if big && len(rings) > 1 {
		return nil, badValue("Only one loop is allowed in the big polygon")
	}
	loops := make([]*s2.Loop, 0, len(rings))
	for i, r := range rings {
		if r.Type != bsoncore.TypeArray {
			return nil, badValue("Polygon coordinates must be an array")
		}
		pts, err := parsePositions(r)
		if err != nil {
			return nil, err
		}
		if len(pts) < 4 {
			return nil, badValue("Loop must have at least 3 different vertices: %s", describe(r))
		}
		if pts[0] != pts[len(pts)-1] {
			return nil, badValue("Loop is not closed, first vertex does not equal last vertex: %s", describe(r))
		}
		pts = dropRepeats(pts[:len(pts)-1])
		if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
			pts = pts[:len(pts)-1]
		}
		if len(pts) < 3 {
			return nil, badValue("Loop must have at least 3 different vertices: %s", describe(r))
		}
		l := s2.LoopFromPoints(pts)
		if err := l.Validate(); err != nil {
			return nil, badValue("Loop is not valid: %s %v", describe(r), err)
		}
		if i, j, ok := selfCrossing(l); ok {
			return nil, badValue("Loop is not valid: %s Edges %d and %d cross", describe(r), i, j)
		}
		if !big {
			// A loop larger than a hemisphere means the smaller region it
			// bounds, whichever way it winds.
			l.Normalize()
		}
		if i > 0 && !loops[0].Contains(l) {
			return nil, badValue("Secondary loops not contained by first exterior loop - secondary loops must be holes: %s first loop: %s", describe(r), describe(rings[0]))
		}
		loops = append(loops, l)
	}
	for i := 1; i < len(loops); i++ {
		for j := i + 1; j < len(loops); j++ {
			if loops[i].Intersects(loops[j]) {
				return nil, badValue("Holes are not allowed to overlap each other: %s and %s", describe(rings[i]), describe(rings[j]))
			}
		}
	}
	p := s2.PolygonFromLoops(loops)
	if err := p.Validate(); err != nil {
		return nil, badValue("Polygon isn't valid: %v %s", err, describe(v))
	}
	return p, nil
}

// selfCrossing finds two edges of l that cross at a point inside both,
// through an index of its edges, so that a loop of many vertices costs
// n log n rather than n squared (S2's Validate leaves this check out).
func selfCrossing(l *s2.Loop) (i, j int, ok bool) {
	index := s2.NewShapeIndex()
	index.Add(l)
	q := s2.NewCrossingEdgeQuery(index)
	vs := l.Vertices()
	for i := range vs {
		if cs := q.Crossings(vs[i], vs[(i+1)%len(vs)], l, s2.CrossingTypeInterior); len(cs) > 0 {
			return i, cs[0], true
		}
	}
	return 0, 0, false
}
