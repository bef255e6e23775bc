package engine

import (
	"bytes"
	"context"
	"math"
	"slices"
	"sort"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/geo"
	"github.com/lethedb/lethe/engine/keycodec"
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
		var points []bsoncore.Value
		for _, c := range conj {
			if c.Path == f.Path && (c.Op == "$eq" || c.Op == "$in") && indexable(c) {
				points = c.Values
				break
			}
		}
		if points == nil || len(prefixes)*len(points) > 100 || ix.Meta.Multikey {
			return nil
		}
		var next [][]byte
		for _, p := range prefixes {
			for _, v := range points {
				k := bytes.Clone(p)
				if f.Desc {
					k = keycodec.AppendDesc(k, v)
				} else {
					k = keycodec.Append(k, v)
				}
				next = append(next, k)
			}
		}
		prefixes = next
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
}

// wholeSphere is the ring radius, in radians, past which a near scan reads
// the whole index rather than the covering of a cap: a cap that large has
// so many cells of the coarsest indexed level that their ranges cost more
// than the keys they skip.
const wholeSphere = 0.5

// materializeNear reads the near query's documents ring by ring outwards
// from its point, as MongoDB's near stages do: each ring reads the index
// ranges of the cells between it and the last, and the documents within its
// radius are final once it is read. Under a limit, the rings stop as soon as
// enough documents are final. The documents held, and the set of those
// seen (a shape may have keys in several rings), count against the sort's
// memory limit, past which the query fails with MongoDB's code; the scans
// check the context.
func (c *Cursor) materializeNear(ctx context.Context, p *plan, srt *query.Sort, k int64) error {
	ns := p.near
	n := ns.Near
	gix := p.ix.Fields[p.ix.GeoField()].Geo
	limit := c.e.sortLimitOf()
	prefixes := [][]byte{record.IndexPrefix(nil, p.ix.Meta.ID)}
	if g := p.ix.GeoField(); g > 0 {
		// nil when the fields before the geo one are not pinned: the
		// whole index is read.
		prefixes = geoPrefixes(p.ix, g, c.filter.Conjuncts())
	}
	radius := nearStartRadius(n, gix)
	if n.Max < radius {
		radius = n.Max
	}
	seen := map[string]struct{}{}
	var items []nearItem
	var held int64
	var inner s2.CellUnion
	var stats scanStats
	for {
		var spans []span
		final := c.nearRingIsWhole(n, gix, radius) || prefixes == nil
		if final {
			lo, hi := record.IndexRange(p.ix.Meta.ID)
			spans = []span{{lo, hi}}
		} else {
			var rs []geo.KeyRange
			rs, inner = gix.NearRanges(n, radius, inner)
			spans = geoSpans(prefixes, rs)
		}
		sc := &scanner{e: c.e, coll: c.coll, p: &plan{kind: planIndex, ix: p.ix, spans: spans}, multi: c.sc.multi}
		for !sc.done {
			err := sc.next(ctx, func(d *storedDoc) (bool, error) {
				if _, dup := seen[string(d.pk)]; dup {
					return true, nil
				}
				matched, err := c.match.MatchErr(d.doc)
				if err != nil || !matched {
					return err == nil, err
				}
				seen[string(d.pk)] = struct{}{}
				dist := nearDistance(n, d.doc, ns.Path)
				doc := d.doc
				if !sc.curOwned {
					doc = bytes.Clone(doc)
				}
				items = append(items, nearItem{d: storedDoc{pk: bytes.Clone(d.pk), h: d.h, doc: doc}, dist: dist})
				held += int64(len(doc) + 2*len(d.pk) + 64)
				if held > limit.Bytes {
					return false, limit.Exceeded(limit.Bytes)
				}
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		stats.keysExamined += sc.stats.keysExamined
		stats.docsExamined += sc.stats.docsExamined
		if final || radius >= n.Max {
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

// nearRingIsWhole reports whether a ring of radius reads the whole index.
func (c *Cursor) nearRingIsWhole(n *geo.Near, gix *geo.Index, radius float64) bool {
	switch {
	case math.IsInf(radius, 1):
		return true
	case gix.Type == geo.Plane:
		// A 2d index read for distances on the sphere has no boxes of the
		// right shape; one of the plane stops growing past its bounds.
		return n.Sphere || radius >= 2*(gix.Max-gix.Min)
	case n.Meters:
		return radius/geo.EarthRadiusMeters >= wholeSphere
	}
	return radius >= wholeSphere
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

// nearDistance is the distance of doc's shape at path from the near point:
// the nearest of its shapes when it has several.
func nearDistance(n *geo.Near, doc bson.Raw, path string) float64 {
	best := math.Inf(1)
	for _, v := range record.GeoValues(bsoncore.Document(doc), path) {
		gs, err := geo.ParseShapes(v)
		if err != nil {
			continue
		}
		for _, g := range gs {
			best = min(best, n.Distance(g))
		}
	}
	return best
}

// nearKeep is how many of a near query's nearest documents it can return:
// skip plus limit, or 0 for all (also when a sort reorders them).
func nearKeep(spec FindSpec, srt *query.Sort) int64 {
	if spec.Limit > 0 && srt == nil {
		return spec.Skip + spec.Limit
	}
	return 0
}
