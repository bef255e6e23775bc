package geo

import (
	"math"
	"sync"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

type regionKind int

const (
	regionShape    regionKind = iota // a $geometry: polygons, or any shape for $geoIntersects
	regionCap                        // $centerSphere: a cap on the sphere
	regionBox                        // $box on the plane
	regionCircle                     // $center on the plane
	regionFlatPoly                   // $polygon on the plane
)

// Region is the argument of $geoWithin or $geoIntersects.
type Region struct {
	kind   regionKind
	shape  *Geometry // regionShape
	cap    s2.Cap    // regionCap
	lo, hi Flat      // regionBox
	center Flat      // regionCircle
	radius float64   // regionCircle
	poly   []Flat    // regionFlatPoly
	// index holds the edges of shape's lines and polygons, built on the
	// first document that needs it (edges).
	indexOnce sync.Once
	index     *s2.ShapeIndex
}

// Flat reports whether r is a region of the plane ($box, $center,
// $polygon), which only a 2d index serves.
func (r *Region) Flat() bool { return r.kind >= regionBox }

// ParseWithin parses the operand of $geoWithin (or its old name $within):
// a document with one of $geometry, $centerSphere, $box, $polygon,
// $center.
func ParseWithin(v bsoncore.Value) (*Region, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("$geoWithin not passed an object: %s", describe(v))
	}
	elems, _ := bsoncore.Document(v.Data).Elements()
	if len(elems) == 0 {
		return nil, badValue("$geoWithin requires a shape: one of $geometry, $box, $polygon, $center, $centerSphere")
	}
	el := elems[0]
	arg := el.Value()
	switch el.Key() {
	case "$geometry":
		g, err := parseGeometryArg(arg)
		if err != nil {
			return nil, err
		}
		if len(g.Points) > 0 || len(g.Lines) > 0 || len(g.Polys) == 0 {
			return nil, badValue("$geoWithin not supported with provided geometry: %s", describe(arg))
		}
		return &Region{kind: regionShape, shape: g}, nil
	case "$centerSphere":
		c, r, err := parseCircle(arg, "$centerSphere")
		if err != nil {
			return nil, err
		}
		if !validLngLat(c.X, c.Y) {
			return nil, badValue("Invalid $centerSphere center: longitude/latitude is out of bounds")
		}
		return &Region{kind: regionCap, cap: s2.CapFromCenterAngle(pointOf(c.X, c.Y), s1.Angle(math.Min(r, math.Pi)))}, nil
	case "$center":
		c, r, err := parseCircle(arg, "$center")
		if err != nil {
			return nil, err
		}
		return &Region{kind: regionCircle, center: c, radius: r}, nil
	case "$box":
		pts, err := flatPoints(arg)
		if err != nil || len(pts) != 2 {
			return nil, badValue("Point must only contain numeric elements")
		}
		lo := Flat{math.Min(pts[0].X, pts[1].X), math.Min(pts[0].Y, pts[1].Y)}
		hi := Flat{math.Max(pts[0].X, pts[1].X), math.Max(pts[0].Y, pts[1].Y)}
		return &Region{kind: regionBox, lo: lo, hi: hi}, nil
	case "$polygon":
		pts, err := flatPoints(arg)
		if err != nil {
			return nil, err
		}
		if len(pts) < 3 {
			return nil, badValue("Polygon must have at least 3 points")
		}
		return &Region{kind: regionFlatPoly, poly: pts}, nil
	}
	return nil, badValue("unknown geo specifier: %s: %s", el.Key(), describe(arg))
}

// ParseIntersects parses the operand of $geoIntersects: {$geometry: ...}.
func ParseIntersects(v bsoncore.Value) (*Region, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("$geoIntersect not passed an object: %s", describe(v))
	}
	arg, ok := bsonvalue.Lookup(v.Data, "$geometry")
	if !ok {
		return nil, badValue("$geoIntersect requires $geometry: %s", describe(v))
	}
	g, err := parseGeometryArg(arg)
	if err != nil {
		return nil, err
	}
	return &Region{kind: regionShape, shape: g}, nil
}

// parseGeometryArg parses the value of $geometry: a GeoJSON object.
func parseGeometryArg(v bsoncore.Value) (*Geometry, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("$geometry must be an object: %s", describe(v))
	}
	return ParseGeoJSON(v.Data)
}

func parseCircle(v bsoncore.Value, op string) (Flat, float64, error) {
	vals, err := arrayValues(v)
	if err != nil || len(vals) != 2 {
		return Flat{}, 0, badValue("%s requires an array of a center and a radius", op)
	}
	c, ok := LegacyPoint(vals[0])
	if !ok {
		return Flat{}, 0, badValue("Point must only contain numeric elements")
	}
	r, ok := number(vals[1])
	if !ok || r < 0 || math.IsNaN(r) {
		return Flat{}, 0, badValue("radius must be a non-negative number")
	}
	return c, r, nil
}

func arrayValues(v bsoncore.Value) ([]bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeArray:
		return bsoncore.Array(v.Data).Values()
	case bsoncore.TypeEmbeddedDocument:
		elems, err := bsoncore.Document(v.Data).Elements()
		vals := make([]bsoncore.Value, len(elems))
		for i, el := range elems {
			vals[i] = el.Value()
		}
		return vals, err
	}
	return nil, badValue("expected an array: %s", describe(v))
}

func flatPoints(v bsoncore.Value) ([]Flat, error) {
	vals, err := arrayValues(v)
	if err != nil {
		return nil, badValue("expected an array of points: %s", describe(v))
	}
	pts := make([]Flat, 0, len(vals))
	for _, e := range vals {
		f, ok := LegacyPoint(e)
		if !ok {
			return nil, badValue("Point must only contain numeric elements")
		}
		pts = append(pts, f)
	}
	return pts, nil
}

// Within reports whether g lies inside r ($geoWithin).
func (r *Region) Within(g *Geometry) bool {
	switch r.kind {
	case regionBox:
		return g.HasFlat && g.Flat.X >= r.lo.X && g.Flat.X <= r.hi.X && g.Flat.Y >= r.lo.Y && g.Flat.Y <= r.hi.Y
	case regionCircle:
		return g.HasFlat && math.Hypot(g.Flat.X-r.center.X, g.Flat.Y-r.center.Y) <= r.radius
	case regionFlatPoly:
		return g.HasFlat && flatPolyContains(r.poly, g.Flat)
	}
	if !g.OnSphere {
		return false
	}
	if r.kind == regionCap {
		for _, p := range g.Points {
			if !r.cap.ContainsPoint(p) {
				return false
			}
		}
		for _, l := range g.Lines {
			for _, p := range *l {
				if !r.cap.ContainsPoint(p) {
					return false
				}
			}
		}
		for _, poly := range g.Polys {
			for _, p := range poly.Loop(0).Vertices() {
				if !r.cap.ContainsPoint(p) {
					return false
				}
			}
		}
		return true
	}
	for _, p := range g.Points {
		if !anyPoly(r.shape.Polys, func(q *s2.Polygon) bool { return q.ContainsPoint(p) }) {
			return false
		}
	}
	for _, l := range g.Lines {
		if !anyPoly(r.shape.Polys, func(q *s2.Polygon) bool { return r.polyContainsLine(q, l) }) {
			return false
		}
	}
	for _, p := range g.Polys {
		if !anyPoly(r.shape.Polys, func(q *s2.Polygon) bool { return q.Contains(p) }) {
			return false
		}
	}
	return true
}

func anyPoly(polys []*s2.Polygon, fn func(*s2.Polygon) bool) bool {
	for _, p := range polys {
		if fn(p) {
			return true
		}
	}
	return false
}

// Intersects reports whether g and r's geometry share a point
// ($geoIntersects).
func (r *Region) Intersects(g *Geometry) bool {
	if r.kind != regionShape || !g.OnSphere {
		return false
	}
	q := r.shape
	for _, p := range q.Points {
		if pointTouches(p, g) {
			return true
		}
	}
	for _, p := range g.Points {
		if pointTouches(p, q) {
			return true
		}
	}
	if len(q.Lines) == 0 && len(q.Polys) == 0 {
		return false
	}
	cross := r.edges()
	for _, l := range q.Lines {
		for _, m := range g.Lines {
			if edgesMeet(cross, l, *m, s2.CrossingTypeAll) {
				return true
			}
		}
		for _, dp := range g.Polys {
			if dp.ContainsPoint((*l)[0]) {
				return true
			}
			for _, loop := range dp.Loops() {
				if edgesMeet(cross, l, closed(loop), s2.CrossingTypeAll) {
					return true
				}
			}
		}
	}
	for _, qp := range q.Polys {
		for _, l := range g.Lines {
			if qp.ContainsPoint((*l)[0]) || edgesMeet(cross, qp, *l, s2.CrossingTypeAll) {
				return true
			}
		}
		for _, dp := range g.Polys {
			if qp.Intersects(dp) {
				return true
			}
		}
	}
	return false
}

// edges is the crossing query of the edges of r's lines and polygons,
// indexed once for all the documents r is tested against: a document's
// edges are then checked in log time each, not against every edge of a
// query shape of many thousands.
func (r *Region) edges() *s2.CrossingEdgeQuery {
	r.indexOnce.Do(func() {
		r.index = s2.NewShapeIndex()
		for _, l := range r.shape.Lines {
			r.index.Add(l)
		}
		for _, q := range r.shape.Polys {
			r.index.Add(q)
		}
		r.index.Build()
	})
	// A query of its own: a CrossingEdgeQuery keeps state between calls,
	// and a filter may be matched from several goroutines.
	return s2.NewCrossingEdgeQuery(r.index)
}

// closed is the chain of a loop's edges, back to its first vertex.
func closed(l *s2.Loop) []s2.Point {
	vs := l.Vertices()
	return append(vs[:len(vs):len(vs)], vs[0])
}

// edgesMeet reports whether an edge of the chain pts meets an edge of
// shape, an indexed shape of the query, in the way t says.
func edgesMeet(q *s2.CrossingEdgeQuery, shape s2.Shape, pts []s2.Point, t s2.CrossingType) bool {
	for i := 0; i+1 < len(pts); i++ {
		if len(q.Crossings(pts[i], pts[i+1], shape, t)) > 0 {
			return true
		}
	}
	return false
}

// onEdge is how close a point must be to a line to be on it: S2's
// predicates are exact on vertices, lines between them are computed.
const onEdge = s1.Angle(1e-15)

// pointTouches reports whether p is one of g's points, on one of its
// lines, or inside or on one of its polygons.
func pointTouches(p s2.Point, g *Geometry) bool {
	for _, q := range g.Points {
		if q == p || q.Distance(p) <= onEdge {
			return true
		}
	}
	for _, l := range g.Lines {
		if lineDistance(p, l) <= onEdge {
			return true
		}
	}
	for _, q := range g.Polys {
		if q.ContainsPoint(p) || polyBoundaryDistance(p, q) <= onEdge {
			return true
		}
	}
	return false
}

// polyContainsLine reports whether l lies inside q, one of the region's
// polygons: its vertices inside and none of its edges crossing q's
// boundary at a point inside both.
func (r *Region) polyContainsLine(q *s2.Polygon, l *s2.Polyline) bool {
	for _, p := range *l {
		if !q.ContainsPoint(p) {
			return false
		}
	}
	return !edgesMeet(r.edges(), q, *l, s2.CrossingTypeInterior)
}

// flatPolyContains reports whether p is inside or on the plane polygon
// poly, by the even-odd rule.
func flatPolyContains(poly []Flat, p Flat) bool {
	in := false
	for i := range poly {
		a, b := poly[i], poly[(i+1)%len(poly)]
		if onSegment(a, b, p) {
			return true
		}
		if (a.Y > p.Y) != (b.Y > p.Y) && p.X < (b.X-a.X)*(p.Y-a.Y)/(b.Y-a.Y)+a.X {
			in = !in
		}
	}
	return in
}

func onSegment(a, b, p Flat) bool {
	cross := (b.X-a.X)*(p.Y-a.Y) - (b.Y-a.Y)*(p.X-a.X)
	if math.Abs(cross) > 1e-12 {
		return false
	}
	return p.X >= math.Min(a.X, b.X) && p.X <= math.Max(a.X, b.X) && p.Y >= math.Min(a.Y, b.Y) && p.Y <= math.Max(a.Y, b.Y)
}
