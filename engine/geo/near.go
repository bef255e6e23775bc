package geo

import (
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

// Near is the point and bounds of $near, $nearSphere or $geoNear, and the
// way its distances are measured.
type Near struct {
	// Meters: the point is GeoJSON and distances are meters on the sphere.
	// Otherwise the point is a legacy pair and distances are radians on the
	// sphere when Sphere is set ($nearSphere, spherical: true), plane units
	// when not.
	Meters bool
	Sphere bool
	Point  s2.Point
	Flat   Flat
	// Min and Max bound the distance, inclusive, in its units; Max is +Inf
	// when there is none.
	Min, Max float64
}

// ParseNear parses the operand of $near or $nearSphere (op) in the
// operator document ops, whose $maxDistance and $minDistance it reads too.
func ParseNear(op string, v bsoncore.Value, ops []byte) (*Near, error) {
	n := &Near{Sphere: op == "$nearSphere", Max: math.Inf(1)}
	var bounds []byte
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument && hasKey(v.Data, "$geometry"):
		gv, _ := bsonvalue.Lookup(v.Data, "$geometry")
		if err := n.setGeoJSON(gv, op); err != nil {
			return nil, err
		}
		bounds = v.Data
	default:
		f, ok := LegacyPoint(v)
		if !ok {
			return nil, badValue("%s must be an array of two numbers or a GeoJSON point: %s", op, describe(v))
		}
		n.Flat = f
		if n.Sphere {
			if !validLngLat(f.X, f.Y) {
				return nil, badValue("longitude/latitude is out of bounds, lng: %v lat: %v", f.X, f.Y)
			}
			n.Point = pointOf(f.X, f.Y)
		}
	}
	for _, doc := range [][]byte{bounds, ops} {
		if doc == nil {
			continue
		}
		for _, name := range []string{"$maxDistance", "$minDistance"} {
			d, ok := bsonvalue.Lookup(doc, name)
			if !ok {
				continue
			}
			x, err := distanceBound(name, d)
			if err != nil {
				return nil, err
			}
			if name == "$maxDistance" {
				n.Max = x
			} else {
				n.Min = x
			}
		}
	}
	return n, nil
}

// NewNear builds the near point of a $geoNear stage: near is a GeoJSON
// point (meters) or a legacy pair (radians when spherical, else plane
// units).
func NewNear(near bsoncore.Value, spherical bool, minDist, maxDist float64) (*Near, error) {
	n := &Near{Sphere: spherical, Min: minDist, Max: maxDist}
	if near.Type == bsoncore.TypeEmbeddedDocument && hasKey(near.Data, "type") {
		if err := n.setGeoJSON(near, "$geoNear"); err != nil {
			return nil, err
		}
		return n, nil
	}
	f, ok := LegacyPoint(near)
	if !ok {
		return nil, badValue("$geoNear requires a 'near' option as an Array or a GeoJSON point: %s", describe(near))
	}
	n.Flat = f
	if spherical {
		if !validLngLat(f.X, f.Y) {
			return nil, badValue("longitude/latitude is out of bounds, lng: %v lat: %v", f.X, f.Y)
		}
		n.Point = pointOf(f.X, f.Y)
	}
	return n, nil
}

func (n *Near) setGeoJSON(gv bsoncore.Value, op string) error {
	if gv.Type != bsoncore.TypeEmbeddedDocument {
		return badValue("%s requires a point, given %s", op, describe(gv))
	}
	g, err := ParseGeoJSON(gv.Data)
	if err != nil {
		return err
	}
	if g.Type != "Point" {
		return badValue("%s requires a point, given %s", op, describe(gv))
	}
	n.Meters, n.Sphere, n.Point, n.Flat = true, true, g.Points[0], g.Flat
	return nil
}

func hasKey(doc []byte, key string) bool {
	_, ok := bsonvalue.Lookup(doc, key)
	return ok
}

func distanceBound(name string, v bsoncore.Value) (float64, error) {
	x, ok := number(v)
	if !ok {
		return 0, badValue("%s must be a number", name)
	}
	if x < 0 || math.IsNaN(x) {
		return 0, badValue("%s must be non-negative", name)
	}
	return x, nil
}

// Distance is how far g is from the near point, in the near's units; +Inf
// when g cannot be measured this way (a legacy pair off the sphere for a
// spherical query, a shape other than a point on the plane).
func (n *Near) Distance(g *Geometry) float64 {
	if !n.Sphere {
		if !g.HasFlat {
			return math.Inf(1)
		}
		return FlatDistance(n.Flat, g.Flat)
	}
	a := Angle(n.Point, g)
	if n.Meters {
		return float64(a) * EarthRadiusMeters
	}
	return float64(a)
}

// InRange reports whether d is within the near's bounds.
func (n *Near) InRange(d float64) bool {
	return !math.IsInf(d, 1) && d >= n.Min && d <= n.Max
}

// Cap is the region of the sphere within radius (in the near's units) of
// the near point, capped at the whole sphere.
func (n *Near) Cap(radius float64) s2.Cap {
	a := radius
	if n.Meters {
		a = radius / EarthRadiusMeters
	}
	if a >= math.Pi || math.IsInf(a, 1) {
		return s2.FullCap()
	}
	return s2.CapFromCenterAngle(n.Point, s1.Angle(a))
}
