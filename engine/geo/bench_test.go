package geo

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// circle is a GeoJSON polygon of n vertices, a circle 30 degrees across.
func circle(b testing.TB, n int) bsoncore.Value {
	ring := make(bson.A, 0, n+1)
	for i := range n {
		a := 2 * math.Pi * float64(i) / float64(n)
		ring = append(ring, bson.A{10 + 30*math.Cos(a), 20 + 30*math.Sin(a)})
	}
	ring = append(ring, ring[0])
	raw, err := bson.Marshal(bson.D{{Key: "v", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	v := bson.Raw(raw).Lookup("v")
	return bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
}

// BenchmarkHugePolygon measures parsing a polygon of 100000 vertices and
// covering it, the work of a $geoWithin before it reads any document.
func BenchmarkHugePolygon(b *testing.B) {
	v := circle(b, 100000)
	p := DefaultParams(3)
	for b.Loop() {
		r, err := ParseWithin(v)
		if err != nil {
			b.Fatal(err)
		}
		p.Ranges(r.Bound())
	}
}
