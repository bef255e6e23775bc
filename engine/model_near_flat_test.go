package engine

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Legacy-coordinate $near on a 2d index in the model test. Documents'
// pt is a legacy pair on a grid of whole units, which only a 2d index
// (pt_2d) holds: no GeoJSON, which a 2d index refuses (jstests/core/
// geo_2d_with_geojson_point.js, SERVER-10636). A $near with a legacy pair
// and $maxDistance beside it measures flat distances, in the plane's
// units, through the 2d index, which MongoDB's $near page says a query on
// legacy coordinates needs; without one the planner finds no plan, 291,
// as for a GeoJSON $near without a 2dsphere index. The model's flat
// queries name no $minDistance, which the same page allows only with a
// 2dsphere index.

// flatPoint is a document's pt: a legacy pair of whole numbers from -2
// to 2, as doubles or ints.
func (g *modelGen) flatPoint() any {
	c := func() any {
		x := g.r.Intn(5) - 2
		if g.r.Intn(2) == 0 {
			return int32(x)
		}
		return float64(x)
	}
	return bson.A{c(), c()}
}

// flatNearFilter is a $near on pt with a legacy pair on the half grid,
// maybe a quarter off it, maybe with a $maxDistance that the grid meets
// exactly (1, 2) or not, maybe with another condition.
func (g *modelGen) flatNearFilter() bson.Raw {
	c := func() float64 {
		x := float64(g.r.Intn(9)-4) / 2
		if g.r.Intn(3) == 0 {
			x += 0.25
		}
		return x
	}
	f := bson.D{{Key: "$near", Value: bson.A{c(), c()}}}
	if g.r.Intn(2) == 0 {
		f = append(f, bson.E{Key: "$maxDistance", Value: []any{int32(0), 1.0, 1.5, int64(2), 2.75}[g.r.Intn(5)]})
	}
	return modelRaw(g.nearRest(bson.D{{Key: "pt", Value: f}}, "pt"))
}

// parseFlatNear reads a legacy $near's pair and the $maxDistance beside
// it.
func parseFlatNear(pair bson.RawArray, arg bson.Raw) refNear {
	n := refNear{flat: true, max: math.Inf(1)}
	vals, _ := pair.Values()
	n.lng, _ = vals[0].AsFloat64OK()
	n.lat, _ = vals[1].AsFloat64OK()
	if v, err := arg.LookupErr("$maxDistance"); err == nil {
		n.max, _ = v.AsFloat64OK()
	}
	return n
}

// keyGeoNear names loc as a $geoNear's key when the collection has a 2d
// index: without a key, $geoNear takes the 2d index's field before any
// 2dsphere one (src/mongo/db/pipeline/pipeline_d.cpp,
// extractGeoNearFieldFromIndexes: "2d indexes are given priority"), where
// its GeoJSON point finds no plan. Recorded in the op, so logs replay.
func (r *modelRun) keyGeoNear(op *modelOp) {
	if r.m.refNearIndex("pt") == nil {
		return
	}
	if _, err := op.GeoNear.LookupErr("key"); err == nil {
		return
	}
	spec := bson.D{}
	elems, _ := op.GeoNear.Elements()
	for _, el := range elems {
		spec = append(spec, bson.E{Key: el.Key(), Value: el.Value()})
	}
	op.GeoNear = modelRaw(append(spec, bson.E{Key: "key", Value: "loc"}))
}
