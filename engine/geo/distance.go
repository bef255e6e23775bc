package geo

import (
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// Angle is the shortest angle on the sphere from p to g: zero inside one of
// its polygons. It is +Inf for a geometry not on the sphere.
func Angle(p s2.Point, g *Geometry) s1.Angle {
	if !g.OnSphere {
		return s1.InfAngle()
	}
	best := s1.InfAngle()
	for _, q := range g.Points {
		best = min(best, p.Distance(q))
	}
	for _, l := range g.Lines {
		best = min(best, lineDistance(p, l))
	}
	for _, q := range g.Polys {
		if q.ContainsPoint(p) {
			return 0
		}
		best = min(best, polyBoundaryDistance(p, q))
	}
	return best
}

func lineDistance(p s2.Point, l *s2.Polyline) s1.Angle {
	best := s1.InfAngle()
	for i := 0; i+1 < len(*l); i++ {
		best = min(best, s2.DistanceFromSegment(p, (*l)[i], (*l)[i+1]))
	}
	return best
}

func polyBoundaryDistance(p s2.Point, q *s2.Polygon) s1.Angle {
	best := s1.InfAngle()
	for _, loop := range q.Loops() {
		vs := loop.Vertices()
		for i := range vs {
			best = min(best, s2.DistanceFromSegment(p, vs[i], vs[(i+1)%len(vs)]))
		}
	}
	return best
}

// FlatDistance is the plane distance between a and b, the distance of a 2d
// index's $near.
func FlatDistance(a, b Flat) float64 {
	return math.Hypot(a.X-b.X, a.Y-b.Y)
}
