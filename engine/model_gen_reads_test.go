package engine

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The generator's read arguments: filters, geo predicates, sorts,
// projections, hints, $text searches and collations.

func (g *modelGen) filter() bson.Raw {
	s := g.scalar
	n := func() any { return g.num(g.r.Intn(4)) }
	var f bson.D
	switch g.r.Intn(26) {
	case 0:
		f = bson.D{}
	case 1, 2, 3:
		f = bson.D{{Key: "_id", Value: g.id()}}
	case 4:
		f = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{g.id(), g.id()}}}}}
	case 5:
		f = bson.D{{Key: "a", Value: s()}}
	case 6:
		f = bson.D{{Key: "a", Value: bson.D{{Key: []string{"$gt", "$gte", "$lt", "$lte", "$ne"}[g.r.Intn(5)], Value: n()}}}}
	case 7:
		f = bson.D{{Key: "u", Value: n()}}
	case 8:
		f = bson.D{{Key: "arr", Value: s()}}
	case 9:
		f = bson.D{{Key: "arr.0", Value: s()}}
	case 10:
		f = bson.D{{Key: "s.x", Value: n()}}
	case 11:
		f = bson.D{{Key: "a", Value: nil}}
	case 12:
		f = bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: g.r.Intn(2) == 0}}}}
	case 13:
		f = bson.D{{Key: "u", Value: n()}, {Key: "a", Value: s()}}
	case 14:
		f = bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "a", Value: s()}}, bson.D{{Key: "u", Value: n()}}}}}
	case 15:
		f = bson.D{{Key: "d", Value: bson.D{{Key: "$lt", Value: g.date()}}}}
	case 16:
		f = bson.D{{Key: "ttl", Value: g.ttlValue()}}
	case 17:
		f = bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{s(), s()}}}}}
	case 18:
		f = bson.D{{Key: "arr", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "$gte", Value: n()}}}}}}
	case 19:
		f = bson.D{{Key: "a", Value: n()}, {Key: "v", Value: bson.D{{Key: "$lte", Value: n()}}}}
	case 20:
		f = bson.D{{Key: "_id", Value: g.id()}, {Key: "a", Value: s()}}
	case 21:
		f = bson.D{{Key: "u", Value: bson.D{{Key: "$gte", Value: n()}}}, {Key: "u", Value: bson.D{{Key: "$lt", Value: n()}}}}
	case 22:
		f = bson.D{{Key: []string{"arr.x", "s.0.x", "s.1.x", "arr.1", "arr.0.0"}[g.r.Intn(5)], Value: n()}}
	case 23:
		f = bson.D{{Key: "arr.0", Value: bson.D{{Key: []string{"$gt", "$lte", "$in"}[g.r.Intn(3)], Value: n()}}}}
	case 24:
		f = bson.D{{Key: "loc", Value: g.geoPredicate()}}
	case 25:
		// A range of _id, of one type or of two (then empty); a plan of
		// exact bounds returns it without testing the filter.
		ops := []string{"$gt", "$gte", "$lt", "$lte"}
		r := bson.D{{Key: ops[g.r.Intn(4)], Value: g.id()}}
		if g.r.Intn(2) == 0 {
			r = append(r, bson.E{Key: ops[g.r.Intn(4)], Value: g.id()})
		}
		f = bson.D{{Key: "_id", Value: r}}
	}
	return modelRaw(f)
}

// geoPredicate is a $geoWithin or $geoIntersects on loc whose shapes'
// edges fall between the points' grid lines, so that no point lies on a
// boundary, where rounding would decide.
func (g *modelGen) geoPredicate() bson.D {
	c := func() float64 { return float64(g.r.Intn(8)-4)/2 + 0.25 }
	switch g.r.Intn(3) {
	case 0:
		x0, y0 := c(), c()
		x1, y1 := x0+float64(1+g.r.Intn(4))/2, y0+float64(1+g.r.Intn(4))/2
		ring := bson.A{bson.A{x0, y0}, bson.A{x1, y0}, bson.A{x1, y1}, bson.A{x0, y1}, bson.A{x0, y0}}
		return bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}}
	case 1:
		// A radius of 0.0123 radians (about 0.7 degrees) meets no grid
		// point's distance from a center off the grid exactly.
		return bson.D{{Key: "$geoWithin", Value: bson.D{{Key: "$centerSphere", Value: bson.A{bson.A{c(), c()}, 0.0123}}}}}
	}
	x0, y0 := c(), c()
	ring := bson.A{bson.A{x0, y0}, bson.A{x0 + 1, y0}, bson.A{x0 + 1, y0 + 1}, bson.A{x0, y0 + 1}, bson.A{x0, y0}}
	return bson.D{{Key: "$geoIntersects", Value: bson.D{{Key: "$geometry", Value: bson.D{{Key: "type", Value: "Polygon"}, {Key: "coordinates", Value: bson.A{ring}}}}}}}
}

func (g *modelGen) sort() bson.Raw {
	fields := []string{"a", "u", "arr", "s.x", "d", "v"}
	var d bson.D
	for i := 1 + g.r.Intn(2); i > 0; i-- {
		f := fields[g.r.Intn(len(fields))]
		dup := false
		for _, e := range d {
			dup = dup || e.Key == f
		}
		if !dup {
			d = append(d, bson.E{Key: f, Value: []int32{1, -1}[g.r.Intn(2)]})
		}
	}
	if g.r.Intn(4) != 0 {
		// A tiebreak on _id makes the order unique.
		d = append(d, bson.E{Key: "_id", Value: []int32{1, -1}[g.r.Intn(2)]})
	}
	return modelRaw(d)
}

func (g *modelGen) projection() bson.Raw {
	switch g.r.Intn(6) {
	case 0:
		return modelRaw(bson.D{{Key: "a", Value: 1}})
	case 1:
		return modelRaw(bson.D{{Key: "_id", Value: 0}, {Key: "u", Value: 1}, {Key: "arr", Value: 1}})
	case 2:
		return modelRaw(bson.D{{Key: "arr", Value: 0}, {Key: "s", Value: 0}})
	}
	return nil
}

// maybeText makes a read without a hint a $text search one time in
// four: terms, a phrase or a negation, sometimes case sensitive.
func (g *modelGen) maybeText(op *modelOp) {
	if op.Hint.Type != 0 || g.r.Intn(4) != 0 {
		return
	}
	search := []string{"coffee", "cake bake", "\"coffee shop\"", "coffee -shop", "café", "shopping", "the", "COFFEE"}[g.r.Intn(8)]
	t := bson.D{{Key: "$search", Value: search}}
	if g.r.Intn(4) == 0 {
		t = append(t, bson.E{Key: "$caseSensitive", Value: true})
	}
	op.Filter = modelRaw(bson.D{{Key: "$text", Value: t}})
}

// caseInsensitive is the collation of the model's collated index, and
// one a query may name.
var caseInsensitive = bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}}

// maybeCollation has a read name a collation, one time in three: one that
// ignores case, one that also ignores accents, or the simple one. Half of
// those reads then filter on strings, where the collation tells.
func (g *modelGen) maybeCollation(op *modelOp) {
	switch g.r.Intn(9) {
	case 0:
		op.Collation = modelRaw(caseInsensitive)
	case 1:
		op.Collation = modelRaw(bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: int32(1)}})
	case 2:
		op.Collation = modelRaw(bson.D{{Key: "locale", Value: "simple"}})
	default:
		return
	}
	if g.r.Intn(2) == 0 {
		return
	}
	str := func() string { return []string{"x", "y", "X"}[g.r.Intn(3)] }
	switch g.r.Intn(4) {
	case 0:
		op.Filter = modelRaw(bson.D{{Key: "a", Value: str()}})
	case 1:
		op.Filter = modelRaw(bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{str(), str()}}}}})
	case 2:
		op.Filter = modelRaw(bson.D{{Key: "a", Value: bson.D{{Key: []string{"$gt", "$gte", "$lt", "$lte", "$ne"}[g.r.Intn(5)], Value: str()}}}})
	case 3:
		op.Filter = modelRaw(bson.D{{Key: "arr", Value: str()}})
	}
}

func (g *modelGen) hint() bson.RawValue {
	if g.r.Intn(4) != 0 {
		return bson.RawValue{}
	}
	names := make([]string, 0, len(hintableIndexes))
	for _, n := range poolIndexNames {
		if hintableIndexes[n] {
			names = append(names, n)
		}
	}
	if g.r.Intn(5) == 0 {
		return rawValue(bson.D{{Key: "$natural", Value: 1}})
	}
	return rawValue(names[g.r.Intn(len(names))])
}
