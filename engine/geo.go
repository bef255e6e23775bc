package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// Geospatial indexes and queries: the engine's side. Package geo has the
// geometry, record the keys; here the key pattern's rules, the index bounds
// of $geoWithin and $geoIntersects (the covering's cell ranges, re-checked
// by the filter), and $near, read ring by ring outwards through the index
// and handed out nearest first.

// noQueryExecutionPlans is MongoDB's code for a query no index can serve
// that needs one, as $near does.
const noQueryExecutionPlans mongoerr.Code = 291

// checkGeoKeyPattern applies MongoDB's rules on geo fields in a key
// pattern: one index type per index, and a 2d field first and alone of its
// kind.
func checkGeoKeyPattern(keys []bson.RawElement) error {
	var types []string
	planes := 0
	for i, k := range keys {
		s, ok := k.Value().StringValueOK()
		if !ok {
			continue
		}
		types = append(types, s)
		if s == geo.Plane {
			if i != 0 {
				return mongoerr.New(16801, "2d has to be first in index")
			}
			if planes++; planes > 1 {
				return mongoerr.New(16800, "can't have 2 geo fields")
			}
		}
	}
	if slices.Contains(types, geo.Plane) && slices.Contains(types, geo.Sphere) {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Can't use more than one index plugin for a single index.")
	}
	return nil
}

// geoSpecDefaults adds the version MongoDB lists for a 2dsphere index
// created without one.
func geoSpecDefaults(keys []bson.RawElement, extra bson.D) bson.D {
	sphere := slices.ContainsFunc(keys, func(k bson.RawElement) bool {
		s, _ := k.Value().StringValueOK()
		return s == geo.Sphere
	})
	if !sphere || slices.ContainsFunc(extra, func(e bson.E) bool { return e.Key == "2dsphereIndexVersion" }) {
		return extra
	}
	return append(extra, bson.E{Key: "2dsphereIndexVersion", Value: int32(3)})
}

// geoPrefixes are the key prefixes of ix before its geo field at g, from
// equality conjuncts on the fields before it; nil when they do not bound
// them all.
func geoPrefixes(ix *record.Index, g int, conj []query.Predicate) [][]byte {
	prefixes := [][]byte{record.IndexPrefix(nil, ix.Meta.ID)}
	for _, f := range ix.Fields[:g] {
		points := equalityPoints(conj, f.Path)
		if points == nil || len(prefixes)*len(points) > 100 || ix.Meta.Multikey {
			return nil
		}
		prefixes = extendPrefixes(prefixes, f, points)
	}
	return prefixes
}

// geoSpans are the spans of ix's geo field at g over key ranges rs, after
// each of the prefixes.
func geoSpans(prefixes [][]byte, rs []geo.KeyRange) []span {
	spans := make([]span, 0, len(prefixes)*len(rs))
	for _, p := range prefixes {
		for _, r := range rs {
			lo := record.GeoKeyBound(bytes.Clone(p), r.Lo)
			hi := record.PrefixEnd(record.GeoKeyBound(bytes.Clone(p), r.Hi))
			spans = append(spans, span{lo, hi})
		}
	}
	sort.Slice(spans, func(a, b int) bool { return bytes.Compare(spans[a].lo, spans[b].lo) < 0 })
	return spans
}

// geoBounds are the spans of a geo index for the filter's $geoWithin or
// $geoIntersects on its geo field, scored above a single-field range and
// below equality: the filter re-checks every document. A geo index serves
// no other predicate: its keys are not the values.
func geoBounds(ix *record.Index, conj []query.Predicate) ([]span, int) {
	g := ix.GeoField()
	f := ix.Fields[g]
	for _, c := range conj {
		if c.Region == nil || c.Path != f.Path {
			continue
		}
		rs, ok := f.Geo.RegionRanges(c.Region)
		if !ok {
			continue
		}
		prefixes := geoPrefixes(ix, g, conj)
		score := 7 + 10*g
		if prefixes == nil {
			lo, hi := record.IndexRange(ix.Meta.ID)
			return []span{{lo, hi}}, 6
		}
		return geoSpans(prefixes, rs), score
	}
	return nil, 0
}

// nearPlan is the plan of a query with $near or $nearSphere: a geo index on
// its path of the kind its point needs (2dsphere for a GeoJSON point, 2d
// for a legacy pair, either for $nearSphere's legacy pair), or MongoDB's
// error when there is none.
func (st *collState) nearPlan(ns *query.NearSpec) (*plan, error) {
	var best *record.Index
	for _, ix := range st.indexes {
		if ix.Meta.Hidden || ix.Partial != nil {
			continue
		}
		g := ix.GeoField()
		if g < 0 || ix.Fields[g].Path != ns.Path {
			continue
		}
		typ := ix.Fields[g].Geo.Type
		switch {
		case ns.Near.Meters && typ != geo.Sphere:
			continue
		case !ns.Near.Meters && !ns.Near.Sphere && typ != geo.Plane:
			continue
		}
		if best == nil || g == 0 && best.GeoField() != 0 {
			best = ix
		}
	}
	if best == nil {
		return nil, plannerError(noQueryExecutionPlans, "unable to find index for $geoNear query")
	}
	lo, hi := record.IndexRange(best.Meta.ID)
	return &plan{kind: planIndex, ix: best, spans: []span{{lo, hi}}, near: ns, sorted: true}, nil
}

// nearStage names a near plan as explain reports it.
func (p *plan) nearStage() string {
	if p.ix.Fields[p.ix.GeoField()].Geo.Type == geo.Plane {
		return "GEO_NEAR_2D"
	}
	return "GEO_NEAR_2DSPHERE"
}

// nearItem is a document a near scan found, with its distance.
type nearItem struct {
	d    storedDoc
	dist float64
	loc  bsoncore.Value // the location dist is to, in d.doc
}

// maxRingCells is how many cells of an index's coarsest level a ring's cap
// may span before a near scan reads the whole index instead: the covering
// of a larger cap has so many cells, as the coarsest level allows no
// bigger ones, that their ranges cost more than the keys they skip. With
// version 3's coarsest level, cells of about 2000 km, the rings grow to the
// whole sphere.
const maxRingCells = 1000

// materializeNear reads the near query's documents nearest first into the
// cursor's items (nearScan); a sort given besides reorders them.
func (c *Cursor) materializeNear(ctx context.Context, p *plan, srt *query.Sort, k int64) error {
	items, held, stats, err := c.e.nearScan(ctx, c.coll, c.sc.multi, p.ix, p.near, c.filter, k)
	if err != nil {
		return err
	}
	c.items = c.items[:0]
	for _, it := range items {
		c.items = append(c.items, it.d)
	}
	if srt != nil {
		sort.SliceStable(c.items, func(i, j int) bool { return srt.Compare(c.items[i].doc, c.items[j].doc) < 0 })
	}
	c.sc.stats = stats
	c.materialized, c.held = true, held
	return nil
}

// nearScan reads the documents of ix that match f and are within the near's
// bounds ring by ring outwards from its point, as MongoDB's near stages do:
// each ring reads the index ranges of the cells between it and the last,
// and the documents within its radius are final once it is read. Under a
// limit k, the rings stop as soon as k documents are final. The documents
// held, and the set of those seen (a shape may have keys in several rings),
// count against the sort's memory limit, past which the query fails with
// MongoDB's code; the scans check the context.
func (e *Engine) nearScan(ctx context.Context, coll *Collection, multi *Transaction, ix *record.Index, ns *query.NearSpec, f *query.Filter, k int64) (items []nearItem, held int64, stats scanStats, err error) {
	n := ns.Near
	gix := ix.Fields[ix.GeoField()].Geo
	limit := e.sortLimitOf()
	match := f.Matcher()
	prefixes := [][]byte{record.IndexPrefix(nil, ix.Meta.ID)}
	if g := ix.GeoField(); g > 0 {
		// nil when the fields before the geo one are not pinned: the
		// whole index is read.
		// Only predicates whose values are keys of the index's
		// collation pin its fields.
		prefixes = geoPrefixes(ix, g, usableConjuncts(f.Conjuncts(), f.Collator(), ix.Collator))
	}
	radius := min(nearStartRadius(n, gix), n.Max)
	// The rings of a 2dsphere index read disjoint ranges, so a document
	// with one key is met once; one with several (multikey), a 2d index's
	// boxes, which overlap, and a whole read after rings meet some again,
	// and need the set of those seen, which counts against the limit too.
	var seen map[string]struct{}
	if gix.Type == geo.Plane || ix.Meta.Multikey {
		seen = map[string]struct{}{}
	}
	rings := gix.NearRings(n)
	for {
		var spans []span
		whole := prefixes == nil || nearRingIsWhole(n, gix, radius, seen != nil)
		if whole && seen == nil {
			seen = map[string]struct{}{}
		}
		full := gix.Type == geo.Sphere && nearRingIsFull(n, radius)
		if whole {
			lo, hi := record.IndexRange(ix.Meta.ID)
			spans = []span{{lo, hi}}
		} else {
			spans = geoSpans(prefixes, rings.Next(radius))
		}
		sc := &scanner{e: e, coll: coll, p: &plan{kind: planIndex, ix: ix, spans: spans}, multi: multi}
		for !sc.done {
			err := sc.next(ctx, func(d *storedDoc) (bool, error) {
				if _, dup := seen[string(d.pk)]; dup && seen != nil {
					return true, nil
				}
				matched, err := match.MatchErr(d.doc)
				if err != nil || !matched {
					return err == nil, err
				}
				dist, loc := nearDistance(n, d.doc, ns.Path)
				if !n.InRange(dist) {
					return true, nil
				}
				if seen != nil {
					seen[string(d.pk)] = struct{}{}
					held += int64(len(d.pk) + 48)
				}
				doc := d.doc
				if !sc.curOwned {
					doc = bytes.Clone(doc)
				}
				items = append(items, nearItem{d: storedDoc{pk: bytes.Clone(d.pk), h: d.h, doc: doc}, dist: dist, loc: loc})
				held += int64(len(doc) + len(d.pk) + 64)
				if k > 0 && int64(len(items)) >= 2*k+64 {
					// Under a limit only the k nearest found so far can
					// be among the answers: a ring that reads many keys
					// holds no more.
					items, held = keepNearest(items, k, held)
				}
				if held > limit.Bytes {
					return false, limit.Exceeded(limit.Bytes)
				}
				return true, nil
			})
			if err != nil {
				return nil, 0, stats, err
			}
		}
		stats.keysExamined += sc.stats.keysExamined
		stats.docsExamined += sc.stats.docsExamined
		if whole || full || radius >= n.Max {
			break
		}
		if k > 0 {
			within := 0
			for _, it := range items {
				if it.dist <= radius {
					within++
				}
			}
			if int64(within) >= k {
				break
			}
		}
		radius = min(radius*4, n.Max)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].dist < items[j].dist })
	if k > 0 && int64(len(items)) > k {
		items = items[:k]
	}
	return items, held, stats, nil
}

// keepNearest keeps the k nearest of items, and what held counts less the
// documents dropped (their primary keys stay in the scan's set of those
// seen, if it keeps one).
func keepNearest(items []nearItem, k int64, held int64) ([]nearItem, int64) {
	sort.SliceStable(items, func(i, j int) bool { return items[i].dist < items[j].dist })
	for i := k; i < int64(len(items)); i++ {
		held -= int64(len(items[i].d.doc) + len(items[i].d.pk) + 64)
		items[i] = nearItem{}
	}
	return items[:k], held
}

// nearRingIsWhole reports whether a ring of radius reads the whole index:
// a 2d index read for distances on the sphere, whose boxes have not the
// shape, or past its bounds; a 2dsphere index when the cap spans more than
// maxRingCells cells of its coarsest level, if the scan keeps the set of
// the documents it has seen (canRepeat), since the whole index holds those
// of the rings before.
func nearRingIsWhole(n *geo.Near, gix *geo.Index, radius float64, canRepeat bool) bool {
	switch {
	case math.IsInf(radius, 1):
		return true
	case gix.Type == geo.Plane:
		return n.Sphere || radius >= 2*(gix.Max-gix.Min)
	case !canRepeat:
		return false
	}
	a := nearAngle(n, radius)
	return 2*math.Pi*(1-math.Cos(a)) > maxRingCells*s2.AvgAreaMetric.Value(gix.Params.Coarsest)
}

// nearRingIsFull reports whether a ring of radius covers the sphere.
func nearRingIsFull(n *geo.Near, radius float64) bool {
	return nearAngle(n, radius) >= math.Pi
}

// nearAngle is radius, in the near's units, as an angle.
func nearAngle(n *geo.Near, radius float64) float64 {
	if n.Meters {
		return radius / geo.EarthRadiusMeters
	}
	return radius
}

// nearStartRadius is the radius of a near scan's first ring: a few cells of
// the finest indexed level (2dsphere), or a thousandth of a 2d index's
// width.
func nearStartRadius(n *geo.Near, gix *geo.Index) float64 {
	if gix.Type == geo.Plane {
		if n.Sphere {
			return math.Inf(1)
		}
		return (gix.Max - gix.Min) / 1024
	}
	a := 4 * s2.AvgEdgeMetric.Value(gix.Params.Finest)
	if n.Meters {
		return a * geo.EarthRadiusMeters
	}
	return a
}

// nearDistance is the distance of doc's shape at path from the near point,
// the nearest of its shapes when it has several, and that shape's value.
func nearDistance(n *geo.Near, doc bson.Raw, path string) (float64, bsoncore.Value) {
	best, loc := math.Inf(1), bsoncore.Value{}
	for _, v := range record.GeoValues(bsoncore.Document(doc), path) {
		gs, err := geo.ParseShapes(v)
		if err != nil {
			continue
		}
		var elems []bsoncore.Value
		if len(gs) > 1 || v.Type == bsoncore.TypeArray && gs[0].Type != "legacy" {
			elems, _ = bsoncore.Array(v.Data).Values()
		}
		for i, g := range gs {
			if d := n.Distance(g); d < best {
				best, loc = d, v
				if i < len(elems) {
					loc = elems[i]
				}
			}
		}
	}
	return best, loc
}

// nearKeep is how many of a near query's nearest documents it can return:
// skip plus limit, or 0 for all (also when a sort reorders them).
func nearKeep(spec FindSpec, srt *query.Sort) int64 {
	if spec.Limit > 0 && srt == nil {
		return spec.Skip + spec.Limit
	}
	return 0
}

func init() {
	// $geoNear runs only as a pipeline's first stage, which the engine
	// reads through a geo index (aggregateGeoNear); anywhere else the
	// pipeline's compiler meets it, MongoDB refuses it.
	pipeline.RegisterStage("$geoNear", func(*pipeline.Compiler, string, bson.RawValue) (pipeline.Stage, error) {
		return nil, mongoerr.New(40602, "$geoNear is only valid as the first stage in a pipeline")
	})
}

// geoNearFirst reports whether a pipeline starts with $geoNear.
func geoNearFirst(stages []bson.Raw) bool {
	if len(stages) == 0 {
		return false
	}
	name, _, _ := pipeline.StageOf(stages[0])
	return name == "$geoNear"
}

// aggregateGeoNear runs a pipeline whose first stage is $geoNear: the
// stage reads the collection through its geo index nearest first, as a
// $near query does, and adds the distance (and location) to each document;
// the other stages run on its output.
func (e *Engine) aggregateGeoNear(ctx context.Context, db, coll string, stages []bson.Raw, po pipeline.Options) (AggregateResult, error) {
	var res AggregateResult
	_, arg, _ := pipeline.StageOf(stages[0])
	spec, err := geo.ParseGeoNearStage(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
	if err != nil {
		return res, err
	}
	rest, err := pipeline.Compile(stages[1:], po)
	if err != nil {
		return res, err
	}
	// The stage's query compares strings under the aggregation's
	// collation, as the query of its near plan does in mongod.
	f, err := query.CompileWith(spec.Query, query.Options{Now: e.clock.Now(), Collator: po.Collator})
	if err != nil {
		return res, err
	}
	if f.Near() != nil {
		return res, query.NearNotAllowed()
	}
	c := e.collection(db, coll)
	if c == nil {
		// The stage needs a geo index, which a missing collection has
		// not: mongod refuses it rather than finding nothing.
		return res, mongoerr.New(mongoerr.NamespaceNotFound, "$geoNear requires a geo index to run, but %s.%s does not exist", db, coll)
	}
	st, err := readState(ctx, c)
	if err != nil {
		return res, err
	}
	ix, err := st.geoNearIndex(db, coll, spec)
	if err != nil {
		return res, err
	}
	var k int64
	if len(stages) > 1 {
		// A $limit after the stage is how many the rings must find.
		if name, v, _ := pipeline.StageOf(stages[1]); name == "$limit" {
			k, _ = v.AsInt64OK()
		}
	}
	ns := &query.NearSpec{Path: ix.Fields[ix.GeoField()].Path, Near: spec.Near}
	items, _, _, err := e.nearScan(ctx, c, transactionOf(ctx), ix, ns, f, k)
	if err != nil {
		return res, err
	}
	docs := make([]bson.Raw, 0, len(items))
	for _, it := range items {
		doc, err := withGeoNearFields(it, spec)
		if err != nil {
			return res, err
		}
		docs = append(docs, doc)
	}
	res.Docs, err = rest.Run(ctx, pipeline.Slice(docs))
	return res, err
}

// geoNearIndex picks the index of a $geoNear: the one on its key, or
// else the only 2d index, or else the only 2dsphere one, and checks that it
// measures the near's distances. As in mongod (pipeline_d.cpp), a hidden
// index names the field too, and a key is taken as given: the near query
// on it then finds no plan, code 291, as a $near does.
func (st *collState) geoNearIndex(db, coll string, spec *geo.GeoNearStage) (*record.Index, error) {
	var found []*record.Index
	for _, typ := range []string{geo.Plane, geo.Sphere} {
		for _, ix := range st.indexes {
			g := ix.GeoField()
			if g < 0 || ix.Partial != nil || ix.Fields[g].Geo.Type != typ || spec.Key != "" && ix.Meta.Hidden {
				continue
			}
			if spec.Key == "" || ix.Fields[g].Path == spec.Key {
				found = append(found, ix)
			}
		}
		if len(found) > 1 && spec.Key == "" {
			return nil, mongoerr.New(mongoerr.IndexNotFound, "There is more than one %s index on %s.%s; unsure which to use for $geoNear", typ, db, coll)
		}
		if len(found) > 0 {
			break
		}
	}
	if len(found) == 0 && spec.Key == "" {
		return nil, mongoerr.New(mongoerr.IndexNotFound, "$geoNear requires a 2d or 2dsphere index, but none were found")
	}
	if len(found) == 0 || found[0].Meta.Hidden {
		return nil, plannerError(noQueryExecutionPlans, "unable to find index for $geoNear query")
	}
	ix := found[0]
	typ := ix.Fields[ix.GeoField()].Geo.Type
	if spec.Near.Meters && typ != geo.Sphere {
		return nil, mongoerr.New(mongoerr.BadValue, "$geoNear with a GeoJSON point requires a 2dsphere index")
	}
	if !spec.Near.Sphere && typ != geo.Plane {
		return nil, mongoerr.New(mongoerr.BadValue, "$geoNear with legacy coordinates on a 2dsphere index requires spherical: true")
	}
	return ix, nil
}

// withGeoNearFields is a $geoNear result: the document with its distance,
// scaled, and the location it was measured to, at their paths.
func withGeoNearFields(it nearItem, spec *geo.GeoNearStage) (bson.Raw, error) {
	var d bson.D
	if err := bson.Unmarshal(it.d.doc, &d); err != nil {
		return nil, fmt.Errorf("engine: $geoNear: %w", err)
	}
	d = setDotted(d, strings.Split(spec.DistanceField, "."), it.dist*spec.Multiplier)
	if spec.IncludeLocs != "" {
		d = setDotted(d, strings.Split(spec.IncludeLocs, "."), bson.RawValue{Type: bson.Type(it.loc.Type), Value: it.loc.Data})
	}
	out, err := bson.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("engine: $geoNear: %w", err)
	}
	return out, nil
}

// setDotted sets the field at path in d, making documents on the way and
// replacing what is not one.
func setDotted(d bson.D, path []string, v any) bson.D {
	for i := range d {
		if d[i].Key != path[0] {
			continue
		}
		if len(path) == 1 {
			d[i].Value = v
			return d
		}
		sub, _ := d[i].Value.(bson.D)
		d[i].Value = setDotted(sub, path[1:], v)
		return d
	}
	if len(path) == 1 {
		return append(d, bson.E{Key: path[0], Value: v})
	}
	return append(d, bson.E{Key: path[0], Value: setDotted(nil, path[1:], v)})
}

// explainGeoNear explains a pipeline that starts with $geoNear: its
// cursor is the near scan of the geo index (GEO_NEAR_2DSPHERE or
// GEO_NEAR_2D), and the stages after it run on its output.
func (e *Engine) explainGeoNear(ctx context.Context, db, coll string, stages []bson.Raw, opts AggregateOptions, execute bool) (PipelineExplanation, error) {
	var ex PipelineExplanation
	_, arg, _ := pipeline.StageOf(stages[0])
	spec, err := geo.ParseGeoNearStage(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
	if err != nil {
		return ex, err
	}
	if _, err := pipeline.Compile(stages[1:], e.pipelineOptions(db, opts)); err != nil {
		return ex, err
	}
	ex.Query = FindSpec{Filter: spec.Query}
	for _, st := range stages[1:] {
		ex.Stages = append(ex.Stages, StageExplanation{Spec: st})
	}
	c := e.collection(db, coll)
	if c == nil {
		ex.Cursor = &Explanation{Stage: "EOF", Direction: "forward", Executed: execute}
		return ex, nil
	}
	ix, err := c.st().geoNearIndex(db, coll, spec)
	if err != nil {
		return ex, err
	}
	p := &plan{kind: planIndex, ix: ix, near: &query.NearSpec{Path: ix.Fields[ix.GeoField()].Path, Near: spec.Near}}
	ex.Cursor = &Explanation{Stage: p.nearStage(), IndexName: ix.Meta.Name, KeyPattern: ix.Meta.Key, Direction: "forward"}
	if !execute || writes(stages[1:]) {
		return ex, nil
	}
	start := time.Now()
	res, err := e.aggregateGeoNear(ctx, db, coll, stages, e.pipelineOptions(db, opts))
	if err != nil {
		return ex, err
	}
	ex.Executed, ex.Millis = true, time.Since(start).Milliseconds()
	ex.Cursor.Executed, ex.Cursor.NReturned = true, int64(len(res.Docs))
	return ex, nil
}

// seekSpans walks the spans of a forward scan of a geo index with one
// iterator, seeking from span to span: a covering's dozens of spans, most
// of them single cells that hold nothing, then cost a seek each rather
// than an iterator each. It resumes after s.resume as scanSpan does.
func (s *scanner) seekSpans(ctx context.Context, r kv.Reader, nowMs int64, fn visitFunc) (bool, error) {
	spans := s.p.spans
	it, err := r.Iter(ctx, spans[0].lo, spans[len(spans)-1].hi, false)
	if err != nil {
		return false, fmt.Errorf("engine: scan: %w", err)
	}
	defer it.Close()
	n := 0
	for _, sp := range spans {
		lo := sp.lo
		if s.resume != nil {
			if bytes.Compare(s.resume, sp.hi) >= 0 {
				continue
			}
			if bytes.Compare(s.resume, lo) >= 0 {
				lo = record.KeySuccessor(s.resume)
			}
		}
		for valid := it.SeekGE(lo); valid && bytes.Compare(it.Key(), sp.hi) < 0; valid = it.Next() {
			// Every few hundred keys, and every few dozen spans below.
			if n++; n%256 == 0 && ctx.Err() != nil {
				return false, ctx.Err()
			}
			if more, err := s.visit(ctx, r, it, nowMs, fn); err != nil || !more {
				return false, err
			}
		}
		if err := it.Error(); err != nil {
			return false, fmt.Errorf("engine: scan: %w", err)
		}
		if n += 8; n%256 < 8 && ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	return true, nil
}

// nearCandidates are the documents an update or delete with $near or
// $nearSphere writes, nearest first, as MongoDB's writes read them through
// the near plan: updateOne and deleteOne take the nearest. A sort given
// besides reorders them.
func (e *Engine) nearCandidates(ctx context.Context, c *Collection, st *collState, ns *query.NearSpec, f *query.Filter, srt *query.Sort, limit int) ([][]byte, error) {
	p, err := st.nearPlan(ns)
	if err != nil {
		return nil, err
	}
	p.countUse(&c.usage, e.clock)
	k := int64(limit)
	if srt != nil || limit < 0 {
		k = 0
	}
	items, _, _, err := e.nearScan(ctx, c, transactionOf(ctx), p.ix, ns, f, k)
	if err != nil {
		return nil, err
	}
	if srt != nil {
		sort.SliceStable(items, func(i, j int) bool { return srt.Compare(items[i].d.doc, items[j].d.doc) < 0 })
	}
	pks := make([][]byte, len(items))
	for i, it := range items {
		pks[i] = it.d.pk
	}
	return pks, nil
}
