package engine

import (
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The generator's values and documents: numbers of four types, a few
// strings, dates, _ids, arrays and places.

// num is n as one of the four numeric types, all of which compare equal.
func (g *modelGen) num(n int) any {
	switch g.r.Intn(4) {
	case 0:
		return int32(n)
	case 1:
		return int64(n)
	case 2:
		return float64(n)
	}
	d, _ := bson.ParseDecimal128(strconv.Itoa(n))
	return d
}

func (g *modelGen) scalar() any {
	switch k := g.r.Intn(20); {
	case k < 12:
		return g.num(g.r.Intn(4))
	case k < 15:
		// "X" equals "x" under a case-insensitive collation.
		return []string{"x", "y", "X"}[g.r.Intn(3)]
	case k < 17:
		return nil
	case k < 18:
		return true
	case k < 19:
		return 1.5
	}
	return g.date()
}

func (g *modelGen) date() bson.DateTime {
	return bson.NewDateTimeFromTime(g.now().Add(time.Duration(g.r.Intn(40)-25) * time.Second))
}

func (g *modelGen) id() any {
	switch k := g.r.Intn(20); {
	case k < 14:
		return g.num(g.r.Intn(6))
	case k < 18:
		return "k" + strconv.Itoa(g.r.Intn(3))
	case k < 19:
		return bson.D{{Key: "k", Value: g.num(g.r.Intn(2))}}
	}
	return nil
}

func (g *modelGen) array() bson.A {
	a := bson.A{}
	for i := g.r.Intn(4); i > 0; i-- {
		switch g.r.Intn(10) {
		case 0:
			a = append(a, bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}})
		case 1, 2:
			inner := bson.A{g.num(g.r.Intn(3))}
			if g.r.Intn(2) == 0 {
				inner = append(inner, g.num(g.r.Intn(3)))
			}
			a = append(a, inner)
		default:
			a = append(a, g.scalar())
		}
	}
	return a
}

func (g *modelGen) ttlValue() any {
	return []any{int32(-1), int32(1), int32(3), int32(20), int64(5), 8.0, int32(0), 20.5, "x", int64(3000000000), nil}[g.r.Intn(11)]
}

// doc is a small document; a few rare shapes are invalid on purpose.
func (g *modelGen) doc() bson.Raw {
	d := bson.D{}
	idLast := g.r.Intn(12) == 0
	if !idLast {
		d = append(d, bson.E{Key: "_id", Value: g.id()})
	}
	maybe := func(p int, key string, v func() any) {
		if g.r.Intn(100) < p {
			d = append(d, bson.E{Key: key, Value: v()})
		}
	}
	maybe(70, "a", g.scalar)
	maybe(50, "u", func() any {
		if g.r.Intn(8) == 0 {
			return nil
		}
		return g.num(g.r.Intn(5))
	})
	maybe(30, "v", func() any { return g.num(g.r.Intn(3)) })
	maybe(45, "arr", func() any {
		if g.r.Intn(5) == 0 {
			return g.scalar()
		}
		return g.array()
	})
	maybe(30, "s", func() any {
		if g.r.Intn(2) == 0 {
			return bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}}
		}
		return bson.A{bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}}, bson.D{{Key: "x", Value: g.num(g.r.Intn(3))}}}
	})
	maybe(35, "d", func() any {
		switch g.r.Intn(4) {
		case 0:
			return bson.A{g.date(), g.date()}
		case 1:
			return "not a date"
		}
		return g.date()
	})
	maybe(35, "ttl", g.ttlValue)
	maybe(45, "loc", g.point)
	maybe(25, "pt", g.flatPoint) // model_near_flat_test.go
	maybe(25, "t", func() any { return modelPhrases[g.r.Intn(len(modelPhrases))] })
	if idLast && g.r.Intn(3) != 0 {
		// Sometimes none at all: the engine makes an ObjectId.
		d = append(d, bson.E{Key: "_id", Value: g.id()})
	}
	switch g.r.Intn(60) {
	case 0:
		d = append(d, bson.E{Key: "_ts", Value: int32(1)})
	case 1:
		d = append(d, bson.E{Key: "_id", Value: bson.A{int32(1)}})
		d = d[len(d)-1:]
	}
	return modelRaw(d)
}

// point is a location: a GeoJSON point or a legacy pair, on a grid of
// half degrees near the origin, so that documents share places.
func (g *modelGen) point() any {
	lng, lat := float64(g.r.Intn(9)-4)/2, float64(g.r.Intn(9)-4)/2
	if g.r.Intn(3) == 0 {
		return bson.A{lng, lat}
	}
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{lng, lat}}}
}

// modelPhrases are the values of documents' t, which the text index
// indexes: words that share stems, stop words, case and accents.
var modelPhrases = []string{"Coffee and cakes", "coffee shop", "Baking a cake", "baked", "café con leche", "Cafe", "the shop", "shopping for COFFEE"}
