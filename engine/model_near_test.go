package engine

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// $near and $nearSphere finds and the $geoNear stage in the model test.
// The reference measures distances itself, with the haversine formula on
// a sphere of MongoDB's radius for GeoJSON points, 6378.1 km
// (kRadiusOfEarthInMeters, src/mongo/db/geo/geoconstants.h), and orders
// by them. The grid of the documents' places makes many distances equal,
// and MongoDB leaves the order of equal distances undefined: the checks
// compare distances, never the order among equal ones, and take two
// distances within refNearTol of each other for equal, since S2 and the
// formula may disagree in the last bits. A document within that much of
// a $minDistance or $maxDistance may be in or out.

// refEarthRadius is MongoDB's radius of the earth for GeoJSON distances.
const refEarthRadius = 6378.1 * 1000

// refNearTol is how far apart two distances in meters may be and still be
// one.
func refNearTol(d float64) float64 { return 1e-6 + 1e-9*math.Abs(d) }

// refHaversine is the distance in meters between two places in degrees.
func refHaversine(lng1, lat1, lng2, lat2 float64) float64 {
	rad := math.Pi / 180
	dLat, dLng := (lat2-lat1)*rad, (lng2-lng1)*rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * refEarthRadius * math.Asin(math.Min(1, math.Sqrt(h)))
}

// refLoc reads a document's place at path (loc or pt), a GeoJSON point
// or a legacy pair, as the generator writes them.
func refLoc(doc bson.Raw, path string) (lng, lat float64, ok bool) {
	v, err := doc.LookupErr(path)
	if err != nil {
		return 0, 0, false
	}
	var pair bson.RawArray
	switch v.Type {
	case bson.TypeArray:
		pair = v.Array()
	case bson.TypeEmbeddedDocument:
		c, err := v.Document().LookupErr("coordinates")
		if err != nil || c.Type != bson.TypeArray {
			return 0, 0, false
		}
		pair = c.Array()
	default:
		return 0, 0, false
	}
	vals, err := pair.Values()
	if err != nil || len(vals) != 2 {
		return 0, 0, false
	}
	x, okx := vals[0].AsFloat64OK()
	y, oky := vals[1].AsFloat64OK()
	return x, y, okx && oky
}

// refNear is a near query as the reference reads it: its path, its
// point, in degrees, and its bounds in meters, or for a flat one
// (model_near_flat_test.go) in the plane's units.
type refNear struct {
	path     string
	flat     bool
	lng, lat float64
	min, max float64
}

// nearPoint is a GeoJSON point on the documents' grid, or a quarter
// degree off it, so that sometimes every distance differs and sometimes
// many are equal.
func (g *modelGen) nearPoint() bson.D {
	c := func() float64 {
		x := float64(g.r.Intn(9)-4) / 2
		if g.r.Intn(3) == 0 {
			x += 0.25
		}
		return x
	}
	return bson.D{{Key: "type", Value: "Point"}, {Key: "coordinates", Value: bson.A{c(), c()}}}
}

// nearBounds are a $maxDistance and $minDistance, or none, in meters;
// the grid's step is about 55.7 km.
func (g *modelGen) nearBounds() (max, min any) {
	if g.r.Intn(3) != 0 {
		max = []any{int32(0), 40000.0, int32(60000), 100000.5, int64(150000), 250000.0, 400000.0}[g.r.Intn(7)]
	}
	if g.r.Intn(3) == 0 {
		min = []any{int32(0), 50000.0, int64(100000), 120000.0}[g.r.Intn(4)]
	}
	return max, min
}

// nearFind makes a find a $near or $nearSphere on loc (nearFilter), maybe
// with a limit, or a sort that overrides the order by distance.
func (g *modelGen) nearFind(op *modelOp) {
	op.Filter = g.nearFilter()
	op.Proj, op.Skip, op.Limit, op.Sort = nil, 0, 0, nil
	if g.r.Intn(2) == 0 {
		op.Limit = int64(1 + g.r.Intn(4))
	}
	if g.r.Intn(4) == 0 {
		op.Sort = g.sort()
	}
}

// nearCount makes a count a $near or $nearSphere on loc, which the count
// command takes, as a find does, through the geo index (MongoDB's drivers
// note that only countDocuments, an aggregate, refuses it).
func (g *modelGen) nearCount(op *modelOp) {
	op.Filter = g.nearFilter()
	op.Hint, op.Collation = bson.RawValue{}, nil
}

// nearDelete makes a delete a $near or $nearSphere on loc: deleteOne
// removes the nearest, deleteMany all within the bounds, as MongoDB's
// writes read through the near plan (jstests/core/geo_update_dedup.js
// updates through one).
func (g *modelGen) nearDelete(op *modelOp) {
	op.Filter = g.nearFilter()
	op.Let, op.Collation, op.Retry = nil, nil, false
}

// nearFilter is a $near or $nearSphere on loc with a GeoJSON point, maybe
// with bounds, maybe with another condition.
func (g *modelGen) nearFilter() bson.Raw {
	if g.r.Intn(3) == 0 {
		return g.flatNearFilter() // model_near_flat_test.go
	}
	near := g.nearPoint()
	arg := bson.D{{Key: "$geometry", Value: near}}
	max, min := g.nearBounds()
	if max != nil {
		arg = append(arg, bson.E{Key: "$maxDistance", Value: max})
	}
	if min != nil {
		arg = append(arg, bson.E{Key: "$minDistance", Value: min})
	}
	f := bson.D{{Key: "loc", Value: bson.D{{Key: []string{"$near", "$nearSphere"}[g.r.Intn(2)], Value: arg}}}}
	return modelRaw(g.nearRest(f, "loc"))
}

// nearRest is a near filter f on path, half the time with another
// condition.
func (g *modelGen) nearRest(f bson.D, path string) bson.D {
	if g.r.Intn(2) == 0 {
		elems, _ := g.filter().Elements()
		for _, el := range elems {
			if el.Key() != path {
				f = append(f, bson.E{Key: el.Key(), Value: el.Value()})
			}
		}
	}
	return f
}

// geoNearAggregate makes an aggregate that starts with $geoNear on a
// GeoJSON point (spherical), maybe with bounds, a query, the key, and a
// $limit or $count after it.
func (g *modelGen) geoNearAggregate(op *modelOp) {
	op.Kind = "aggregate"
	spec := bson.D{{Key: "near", Value: g.nearPoint()}, {Key: "distanceField", Value: "dist"}, {Key: "spherical", Value: true}}
	var max, min any
	if g.r.Intn(2) == 0 {
		max, min = g.nearBounds()
	}
	if max != nil {
		spec = append(spec, bson.E{Key: "maxDistance", Value: max})
	}
	if min != nil {
		spec = append(spec, bson.E{Key: "minDistance", Value: min})
	}
	if g.r.Intn(3) == 0 {
		spec = append(spec, bson.E{Key: "key", Value: "loc"})
	}
	// The distance scaled, as to kilometers or by an odd factor, and the
	// location it was measured to (src/mongo/db/pipeline/
	// document_source_geo_near_cursor.cpp, transformDoc: the distance
	// times distanceMultiplier, then includeLocs, each set at its path;
	// jstests/core/geob.js and geo_s2near.js).
	if g.r.Intn(3) == 0 {
		spec = append(spec, bson.E{Key: "distanceMultiplier", Value: []any{0.001, int32(3), 0.5}[g.r.Intn(3)]})
	}
	if g.r.Intn(3) == 0 {
		spec = append(spec, bson.E{Key: "includeLocs", Value: "where"})
	}
	op.GeoNear = modelRaw(spec)
	// Queries are rarer than in other reads, so that most runs find
	// documents whose distances and order the checks can compare.
	if g.r.Intn(4) == 0 {
		op.Filter = g.filter()
	}
	// The stage's query compares strings under the aggregate's collation:
	// often a case-insensitive one and a query on a string.
	if g.r.Intn(4) == 0 {
		op.Collation = modelRaw(caseInsensitive)
		op.Filter = modelRaw(bson.D{{Key: "a", Value: []string{"x", "X", "y"}[g.r.Intn(3)]}})
	} else {
		g.maybeCollation(op)
	}
	switch g.r.Intn(4) {
	case 0:
		op.Stages = []bson.Raw{modelRaw(bson.D{{Key: "$limit", Value: int64(1 + g.r.Intn(4))}})}
	case 1:
		op.Stages = []bson.Raw{modelRaw(bson.D{{Key: "$count", Value: "n"}})}
	}
}

// geoNearStage is op's $geoNear stage, its query the op's filter.
func geoNearStage(op *modelOp, filter bson.Raw) bson.Raw {
	var spec bson.D
	elems, _ := op.GeoNear.Elements()
	for _, el := range elems {
		spec = append(spec, bson.E{Key: el.Key(), Value: el.Value()})
	}
	if filter != nil {
		spec = append(spec, bson.E{Key: "query", Value: filter})
	}
	return modelRaw(bson.D{{Key: "$geoNear", Value: spec}})
}

// nearOperator is the $near or $nearSphere of a filter on loc or pt, ""
// for none.
func nearOperator(filter bson.Raw) string {
	_, op := nearPath(filter)
	return op
}

// nearPath is the path and operator of a filter's $near or $nearSphere:
// on loc, or on pt (model_near_flat_test.go); "" for none.
func nearPath(filter bson.Raw) (path, op string) {
	for _, path := range []string{"loc", "pt"} {
		arg, ok := filter.Lookup(path).DocumentOK()
		if !ok {
			continue
		}
		for _, name := range []string{"$near", "$nearSphere"} {
			if _, err := arg.LookupErr(name); err == nil {
				return path, name
			}
		}
	}
	return "", ""
}

// parseRefNear reads a GeoJSON point and the bounds beside it.
func parseRefNear(point, bounds bson.Raw, maxName, minName string) refNear {
	n := refNear{path: "loc", max: math.Inf(1)}
	coords, _ := point.Lookup("coordinates").ArrayOK()
	vals, _ := coords.Values()
	n.lng, _ = vals[0].AsFloat64OK()
	n.lat, _ = vals[1].AsFloat64OK()
	if v, err := bounds.LookupErr(maxName); err == nil {
		n.max, _ = v.AsFloat64OK()
	}
	if v, err := bounds.LookupErr(minName); err == nil {
		n.min, _ = v.AsFloat64OK()
	}
	return n
}

// nearFilter is the reference's reading of a count's or delete's filter
// with $near or $nearSphere: the near clause, the rest compiled, and the
// error mongod answers, 291 when an existing collection has no visible
// index of the kind the near needs. (A find compiles its sort between the
// two checks.)
func (m *refModel) nearFilter(filter bson.Raw) (refNear, *query.Filter, error) {
	n, rest := splitNear(filter)
	f, err := query.Compile(rest)
	if ix := m.refNearIndex(n.path); err == nil && m.exists && (ix == nil || ix.hidden) {
		err = refErr(noQueryExecutionPlans)
	}
	return n, f, err
}

// splitNear is a find's near query and the rest of its filter.
func splitNear(filter bson.Raw) (refNear, bson.Raw) {
	path, op := nearPath(filter)
	var n refNear
	if v := filter.Lookup(path, op); v.Type == bson.TypeArray {
		n = parseFlatNear(v.Array(), filter.Lookup(path).Document()) // model_near_flat_test.go
	} else {
		arg := v.Document()
		n = parseRefNear(arg.Lookup("$geometry").Document(), arg, "$maxDistance", "$minDistance")
	}
	n.path = path
	rest := bson.D{}
	elems, _ := filter.Elements()
	for _, el := range elems {
		if el.Key() != path {
			rest = append(rest, bson.E{Key: el.Key(), Value: el.Value()})
		}
	}
	return n, modelRaw(rest)
}

// refNearItem is a document within a near query's bounds, or near enough
// to one of them that it may be (optional).
type refNearItem struct {
	d        *refDoc
	dist     float64
	optional bool
}

// nearItems are the visible documents that match f and lie within n's
// bounds, nearest first.
func (m *refModel) nearItems(n refNear, f *query.Filter, now int64) []refNearItem {
	var out []refNearItem
	for _, d := range m.matching(f, now) {
		lng, lat, ok := refLoc(d.doc, n.path)
		if !ok {
			continue
		}
		dist := refHaversine(n.lng, n.lat, lng, lat)
		if n.flat {
			dist = math.Hypot(lng-n.lng, lat-n.lat)
		}
		tol := refNearTol(dist)
		if dist < n.min-tol || dist > n.max+tol {
			continue
		}
		required := (n.min == 0 || dist >= n.min+tol) && dist <= n.max-tol
		out = append(out, refNearItem{d: d, dist: dist, optional: !required})
	}
	slices.SortStableFunc(out, func(a, b refNearItem) int { return cmpFloat(a.dist, b.dist) })
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// refGeoIndex is the model's 2dsphere index on loc, visible or not; nil
// when there is none.
func (m *refModel) refGeoIndex() *refIndex { return m.refNearIndex("loc") }

// refNearIndex is the model's index that a near query on path needs:
// the 2dsphere index on loc, or the 2d one on pt.
func (m *refModel) refNearIndex(path string) *refIndex {
	name := map[string]string{"loc": "loc_2dsphere", "pt": "pt_2d"}[path]
	for _, ix := range m.indexes {
		if ix.name == name {
			return ix
		}
	}
	return nil
}

// checkNearOrder checks docs, a near query's answer nearest first, against
// the reference's items: each is one of them, once; their distances never
// decrease (equal ones in any order); and none is missing, that is, every
// item that must be in is, if the answer is not cut by the limit, else
// every one nearer than the last returned. dist, if set, reads the
// distance the engine reported, which must be the reference's.
func checkNearOrder(what string, docs []bson.Raw, items []refNearItem, limit int64, dist func(bson.Raw) (float64, bson.Raw, error)) error {
	byID := func(doc bson.Raw) int {
		id := bsoncore.Document(doc).Lookup("_id")
		return slices.IndexFunc(items, func(it refNearItem) bool { return keycodec.Compare(it.d.id(), id) == 0 })
	}
	seen := map[int]bool{}
	last := math.Inf(-1)
	for i, doc := range docs {
		body := doc
		var got float64
		if dist != nil {
			var err error
			if got, body, err = dist(doc); err != nil {
				return fmt.Errorf("%s: result %d %s: %v", what, i, doc, err)
			}
		}
		k := byID(body)
		if k < 0 || seen[k] {
			return fmt.Errorf("%s: result %d %s is not within the bounds, or repeats; model %s", what, i, doc, nearList(items))
		}
		seen[k] = true
		it := items[k]
		if !bytes.Equal(body, it.d.doc) {
			return fmt.Errorf("%s: result %d is %s, model %s", what, i, body, it.d.doc)
		}
		if dist != nil && math.Abs(got-it.dist) > refNearTol(it.dist) {
			return fmt.Errorf("%s: result %d %s at distance %v, model %v", what, i, body, got, it.dist)
		}
		if it.dist < last-refNearTol(last) {
			return fmt.Errorf("%s: result %d %s at %v after one at %v; model %s", what, i, body, it.dist, last, nearList(items))
		}
		last = max(last, it.dist)
	}
	if limit > 0 && int64(len(docs)) > limit {
		return fmt.Errorf("%s: %d results past the limit %d", what, len(docs), limit)
	}
	cut := limit > 0 && int64(len(docs)) == limit
	for k, it := range items {
		if seen[k] || it.optional || cut && it.dist >= last-refNearTol(last) {
			continue
		}
		return fmt.Errorf("%s: engine returned %s without %s at %v; model %s", what, rawList(docs), it.d.doc, it.dist, nearList(items))
	}
	return nil
}

func nearList(items []refNearItem) string {
	var b bytes.Buffer
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v@%.3f", bson.RawValue{Type: bson.Type(it.d.id().Type), Value: it.d.id().Data}, it.dist)
		if it.optional {
			b.WriteString("?")
		}
	}
	b.WriteString("]")
	return b.String()
}

// ensureGeoIndex builds the index a near query on the op's filter needs
// (loc_2dsphere, or pt_2d for a flat one; loc_2dsphere for a $geoNear),
// as a createIndexes step of its own, before all but one plain near query
// in skip (by a checksum of the op's spec, so that logs replay) on a
// collection that lacks it, so that more of them find than fail.
func (r *modelRun) ensureGeoIndex(ctx context.Context, op *modelOp, spec bson.Raw, skip int) error {
	path, kind := "loc", "2dsphere"
	if p, _ := nearPath(op.Filter); p == "pt" {
		path, kind = "pt", "2d"
	}
	if op.InTxn != 0 || !r.m.exists || r.m.refNearIndex(path) != nil || crc32.ChecksumIEEE(spec)%uint32(skip) == 0 {
		return nil
	}
	// The index is made by a step of its own, which ends by clearing the
	// reference's state of the write under way: its bypassDocumentValidation.
	bypass := r.m.bypass
	defer func() { r.m.bypass = bypass }()
	return r.step(ctx, &modelOp{Kind: "createIndexes", Specs: []bson.Raw{modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: path, Value: kind}}}, {Key: "name", Value: path + "_" + kind}})}})
}

// stepNearFind runs a find with $near or $nearSphere. Without a 2dsphere
// index the planner finds no plan: code 291, "unable to find index for
// $geoNear query" (MongoDB's $near page: "$near requires a geospatial
// index"); a missing collection has nothing to find.
func (r *modelRun) stepNearFind(ctx context.Context, op *modelOp) error {
	now := r.now()
	if op.Sort != nil {
		// The sort replaces the order by distance; a tiebreak on _id
		// makes it unique.
		if _, err := op.Sort.LookupErr("_id"); err != nil {
			op.Sort = append(bytes.Clone(op.Sort[:len(op.Sort)-1]), bsoncore.AppendInt32Element(nil, "_id", 1)...)
			op.Sort = bson.Raw(fixLength(append(op.Sort, 0)))
		}
	}
	if err := r.ensureGeoIndex(ctx, op, op.Filter, 3); err != nil {
		return err
	}
	spec := FindSpec{Filter: op.Filter, Sort: op.Sort, Limit: op.Limit}
	var docs []bson.Raw
	var err error
	if herr := r.guard("find near", func() {
		var cur *Cursor
		if cur, err = r.e.Find(ctx, modelDB, modelColl, spec); err == nil {
			docs, err = cur.All(ctx)
		}
	}); herr != nil {
		return herr
	}
	n, rest := splitNear(op.Filter)
	f, werr := query.Compile(rest)
	var srt *query.Sort
	if werr == nil && op.Sort != nil {
		srt, werr = query.CompileSort(op.Sort)
	}
	if ix := r.m.refNearIndex(n.path); werr == nil && r.m.exists && (ix == nil || ix.hidden) {
		werr = refErr(noQueryExecutionPlans)
	}
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("find near: engine error %v, model code %d", err, codeOf(werr))
	}
	outcome := "outcome.near."
	if n.flat {
		outcome = "outcome.near2d."
	}
	if werr != nil {
		r.counts[outcome+"refused"]++
		return nil
	}
	items := r.m.nearItems(n, f, now)
	if len(items) > 0 {
		r.counts[outcome+"found"]++
	} else {
		r.counts[outcome+"none"]++
	}
	if srt == nil {
		return checkNearOrder("find near", docs, items, op.Limit, nil)
	}
	slices.SortStableFunc(items, func(a, b refNearItem) int { return srt.Compare(a.d.doc, b.d.doc) })
	if slices.ContainsFunc(items, func(it refNearItem) bool { return it.optional }) {
		// Which of those at a bound are in decides the window: only
		// that the answer is some of them is sure.
		var all []bson.Raw
		for _, it := range items {
			all = append(all, it.d.doc)
		}
		if !subMultiset(docs, all) {
			return fmt.Errorf("find near sorted: engine returned %s, not of %s", rawList(docs), rawList(all))
		}
		return nil
	}
	var want []bson.Raw
	for _, it := range items {
		want = append(want, it.d.doc)
	}
	if op.Limit > 0 && len(want) > int(op.Limit) {
		want = want[:op.Limit]
	}
	if !slices.EqualFunc(docs, want, func(a, b bson.Raw) bool { return bytes.Equal(a, b) }) {
		return fmt.Errorf("find near sorted: engine returned %s, model %s", rawList(docs), rawList(want))
	}
	return nil
}

// stepNearCount runs a count with $near or $nearSphere: as many as lie
// within the bounds, less skip, up to limit; without a 2dsphere index,
// 291, as for a find.
func (r *modelRun) stepNearCount(ctx context.Context, op *modelOp) error {
	now := r.now()
	if err := r.ensureGeoIndex(ctx, op, op.Filter, 3); err != nil {
		return err
	}
	var got int64
	var err error
	if herr := r.guard("count near", func() { got, err = r.e.Count(ctx, modelDB, modelColl, op.Filter, op.Skip, op.Limit, bson.RawValue{}) }); herr != nil {
		return herr
	}
	n, f, werr := r.m.nearFilter(op.Filter)
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("count near: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		return nil
	}
	items := r.m.nearItems(n, f, now)
	window := func(k int) int64 {
		w := max(int64(k)-op.Skip, 0)
		if op.Limit > 0 {
			w = min(w, op.Limit)
		}
		return w
	}
	optional := 0
	for _, it := range items {
		if it.optional {
			optional++
		}
	}
	if lo, hi := window(len(items)-optional), window(len(items)); got < lo || got > hi {
		return fmt.Errorf("count near: engine %d, model %d to %d; %s", got, lo, hi, nearList(items))
	}
	return nil
}

// stepNearDelete runs a delete with $near or $nearSphere (never in a
// transaction: the documents it removed are read back from the store).
// deleteMany removes the documents within the bounds, those at a bound
// maybe; deleteOne the nearest, any of those at the least distance.
func (r *modelRun) stepNearDelete(ctx context.Context, op *modelOp) error {
	now := r.now()
	if err := r.ensureGeoIndex(ctx, op, op.Filter, 3); err != nil {
		return err
	}
	var got int64
	var err error
	if herr := r.guard("delete near", func() { got, err = r.e.Delete(ctx, modelDB, modelColl, op.Filter, int(op.Limit), bson.RawValue{}) }); herr != nil {
		return herr
	}
	n, f, werr := r.m.nearFilter(op.Filter)
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("delete near: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		return nil
	}
	items := r.m.nearItems(n, f, now)
	stored, err := r.engineDocs(true)
	if err != nil {
		return err
	}
	var gone []*refDoc
	for _, d := range r.m.visible(now) {
		if !slices.ContainsFunc(stored, func(s *refDoc) bool { return keycodec.Compare(s.id(), d.id()) == 0 }) {
			gone = append(gone, d)
		}
	}
	var required []refNearItem
	for _, it := range items {
		if !it.optional {
			required = append(required, it)
		}
	}
	isItem := func(d *refDoc) int { return slices.IndexFunc(items, func(it refNearItem) bool { return it.d == d }) }
	for _, d := range gone {
		if isItem(d) < 0 {
			return fmt.Errorf("delete near: engine removed %s, not within the bounds; model %s", d.doc, nearList(items))
		}
	}
	if got != int64(len(gone)) {
		return fmt.Errorf("delete near: engine reported %d, removed %d", got, len(gone))
	}
	if op.Limit == 1 {
		if len(gone) > 1 || len(gone) == 0 && len(required) > 0 {
			return fmt.Errorf("delete near: deleteOne removed %d; model %s", len(gone), nearList(items))
		}
		if len(gone) == 1 {
			d := items[isItem(gone[0])].dist
			if near := items[0].dist; d > near+refNearTol(near) {
				return fmt.Errorf("delete near: deleteOne removed %s at %v, not the nearest at %v; model %s", gone[0].doc, d, near, nearList(items))
			}
		}
	} else {
		for _, it := range required {
			if !slices.Contains(gone, it.d) {
				return fmt.Errorf("delete near: deleteMany left %s at %v; model %s", it.d.doc, it.dist, nearList(items))
			}
		}
	}
	r.m.remove(gone...)
	return nil
}

// stepGeoNear runs an aggregate that starts with $geoNear. MongoDB's
// errors (src/mongo/db/pipeline/pipeline_d.cpp): a missing collection is
// NamespaceNotFound ("$geoNear requires a geo index to run"); without a
// key, a collection with no geo index is IndexNotFound; with one, or with
// only a hidden index, the near query on the key finds no plan (291).
func (r *modelRun) stepGeoNear(ctx context.Context, op *modelOp) error {
	now := r.now()
	r.keyGeoNear(op) // model_near_flat_test.go
	if err := r.ensureGeoIndex(ctx, op, op.GeoNear, 8); err != nil {
		return err
	}
	stages := aggregateStages(op, op.Filter)
	var docs []bson.Raw
	var err error
	if herr := r.guard("aggregate geoNear", func() {
		docs, err = r.e.Aggregate(WithCollation(ctx, op.Collation), modelDB, modelColl, stages, AggregateOptions{})
	}); herr != nil {
		return herr
	}
	n := parseRefNear(op.GeoNear.Lookup("near").Document(), op.GeoNear, "maxDistance", "minDistance")
	f, werr := refFilterOf(op, op.Filter)
	if werr == nil {
		ix := r.m.refGeoIndex()
		_, keyed := op.GeoNear.LookupErr("key")
		switch {
		case !r.m.exists:
			werr = refErr(mongoerr.NamespaceNotFound)
		case ix == nil && keyed == nil, ix != nil && ix.hidden:
			werr = refErr(noQueryExecutionPlans)
		case ix == nil:
			werr = refErr(mongoerr.IndexNotFound)
		}
	}
	if codeOf(err) != codeOf(werr) {
		return fmt.Errorf("aggregate geoNear: engine error %v, model code %d", err, codeOf(werr))
	}
	if werr != nil {
		r.counts["outcome.geoNear.refused"]++
		return nil
	}
	items := r.m.nearItems(n, f, now)
	if len(items) > 0 {
		r.counts["outcome.geoNear.found"]++
	} else {
		r.counts["outcome.geoNear.none"]++
	}
	var limit int64
	if len(op.Stages) > 0 {
		if name, v, _ := StageOf(op.Stages[0]); name == "$limit" {
			limit, _ = v.AsInt64OK()
		} else {
			// $count: how many, when the bounds leave no doubt.
			optional := 0
			for _, it := range items {
				if it.optional {
					optional++
				}
			}
			var got int64
			if len(docs) == 1 {
				got, _ = docs[0].Lookup("n").AsInt64OK()
			}
			if len(docs) > 1 || int(got) < len(items)-optional || int(got) > len(items) {
				return fmt.Errorf("aggregate geoNear $count: engine %s, model %d (%d of them at a bound)", rawList(docs), len(items), optional)
			}
			return nil
		}
	}
	return checkNearOrder("aggregate geoNear", docs, items, limit, geoNearFields(op.GeoNear))
}

// geoNearFields reads what a $geoNear of spec added to a document, as
// fields the documents never have, so appended: the distance, then the
// location when includeLocs names one, which must be the document's loc
// as stored. It returns the distance unscaled, to compare with the
// reference's, and the document without them, which must be the stored
// one.
func geoNearFields(spec bson.Raw) func(doc bson.Raw) (float64, bson.Raw, error) {
	mult := 1.0
	if v, err := spec.LookupErr("distanceMultiplier"); err == nil {
		mult, _ = v.AsFloat64OK()
	}
	_, locs := spec.LookupErr("includeLocs")
	return func(doc bson.Raw) (float64, bson.Raw, error) {
		elems, err := doc.Elements()
		if err != nil {
			return 0, nil, err
		}
		var where bson.RawValue
		if locs == nil {
			if len(elems) == 0 || elems[len(elems)-1].Key() != "where" {
				return 0, nil, fmt.Errorf("no location last")
			}
			where = elems[len(elems)-1].Value()
			elems = elems[:len(elems)-1]
		}
		if len(elems) == 0 || elems[len(elems)-1].Key() != "dist" {
			return 0, nil, fmt.Errorf("no distance last")
		}
		d, ok := elems[len(elems)-1].Value().DoubleOK()
		if !ok {
			return 0, nil, fmt.Errorf("distance %v is not a double", elems[len(elems)-1].Value())
		}
		body := bsoncore.NewDocumentBuilder()
		for _, el := range elems[:len(elems)-1] {
			body.AppendValue(el.Key(), bsoncore.Value{Type: bsoncore.Type(el.Value().Type), Data: el.Value().Value})
		}
		stored := bson.Raw(body.Build())
		if locs == nil && !where.Equal(stored.Lookup("loc")) {
			return 0, nil, fmt.Errorf("location %v, the document's loc %v", where, stored.Lookup("loc"))
		}
		return d / mult, stored, nil
	}
}
