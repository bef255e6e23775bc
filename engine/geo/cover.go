package geo

import (
	"slices"

	"github.com/golang/geo/s2"

	"github.com/lethedb/lethe/mongoerr"
)

// IndexParams are a 2dsphere index's covering parameters.
type IndexParams struct {
	// Version is the index's 2dsphereIndexVersion: from 3 on, points are
	// keyed by their leaf cells and the defaults below differ.
	Version int
	// Finest and Coarsest bound the levels of the cells of other shapes'
	// keys and of a query's covering.
	Finest, Coarsest int
	// MaxCells is how many cells a covering is cut into, as far as the
	// levels allow (MongoDB's maxCellsInCovering, advisory).
	MaxCells int
}

// pointLevel is the level of a point's key from version 3 on: its leaf.
const pointLevel = s2.MaxLevel

// DefaultParams are the covering parameters of a 2dsphere index of version
// v created without finestIndexedLevel and coarsestIndexedLevel, as MongoDB
// sets them: for version 3, cells of about 110 m to 2000 km and 20 cells a
// covering; before, 500 m to 100 km and 50.
func DefaultParams(v int) IndexParams {
	if v <= 2 {
		return IndexParams{Version: v, Finest: s2.AvgEdgeMetric.ClosestLevel(500 / EarthRadiusMeters),
			Coarsest: s2.AvgEdgeMetric.ClosestLevel(100 * 1000 / EarthRadiusMeters), MaxCells: 50}
	}
	return IndexParams{Version: v, Finest: s2.AvgEdgeMetric.ClosestLevel(110 / EarthRadiusMeters),
		Coarsest: s2.AvgEdgeMetric.ClosestLevel(2000 * 1000 / EarthRadiusMeters), MaxCells: 20}
}

// CheckParams validates an index's levels as createIndexes does, with
// MongoDB's codes.
func CheckParams(p IndexParams) error {
	switch {
	case p.Coarsest < 0:
		return mongoerr.New(16747, "coarsestIndexedLevel must be >= 0")
	case p.Finest > s2.MaxLevel:
		return mongoerr.New(16748, "finestIndexedLevel must be <= 30")
	case p.Finest < p.Coarsest:
		return mongoerr.New(16749, "finestIndexedLevel must be >= coarsestIndexedLevel")
	}
	return nil
}

func (p IndexParams) coverer() *s2.RegionCoverer {
	return &s2.RegionCoverer{MinLevel: p.Coarsest, MaxLevel: p.Finest, LevelMod: 1, MaxCells: p.MaxCells}
}

// Cells are the index keys of g: the leaf cell of each point (from version
// 3; before, its cell at the finest level), and a covering of each line and
// polygon between the coarsest and finest levels, sorted and without
// repeats.
func (p IndexParams) Cells(g *Geometry) []s2.CellID {
	var cells []s2.CellID
	for _, pt := range g.Points {
		c := s2.CellFromPoint(pt).ID()
		if p.Version <= 2 {
			c = c.Parent(p.Finest)
		}
		cells = append(cells, c)
	}
	rc := p.coverer()
	for _, l := range g.Lines {
		cells = append(cells, rc.Covering(l)...)
	}
	for _, q := range g.Polys {
		cells = append(cells, rc.Covering(q)...)
	}
	slices.Sort(cells)
	return slices.Compact(cells)
}

// CellRange is an inclusive range of cell ids to scan.
type CellRange struct{ Lo, Hi s2.CellID }

// Ranges are the cell ranges whose keys may belong to geometries meeting
// region: each covering cell's descendants (points' leaves among them) and
// its ancestors down to the coarsest indexed level, sorted and merged.
func (p IndexParams) Ranges(region s2.Region) []CellRange {
	return p.rangesOf(p.coverer().Covering(region))
}

// AnnulusRanges are the ranges of the cells covering outer but not the
// covering inner, which a scan has read: the next ring of a $near. The
// ancestors of its cells that the scan of inner read (as descendants of
// its cells, or as ancestors, listed in done) are left out, and the new
// ones added to done.
func (p IndexParams) AnnulusRanges(inner, outer s2.CellUnion, done map[s2.CellID]bool) []CellRange {
	var rs []CellRange
	for _, c := range s2.CellUnionFromDifference(outer, inner) {
		rs = append(rs, CellRange{c.RangeMin(), c.RangeMax()})
		for l := c.Level() - 1; l >= p.Coarsest; l-- {
			a := c.Parent(l)
			if done[a] || inner.ContainsCellID(a) {
				continue
			}
			done[a] = true
			rs = append(rs, CellRange{a, a})
		}
	}
	return mergeRanges(rs)
}

// Covering is the query covering of region.
func (p IndexParams) Covering(region s2.Region) s2.CellUnion {
	return p.coverer().Covering(region)
}

func (p IndexParams) rangesOf(cover []s2.CellID) []CellRange {
	var rs []CellRange
	for _, c := range cover {
		rs = append(rs, CellRange{c.RangeMin(), c.RangeMax()})
		for l := c.Level() - 1; l >= p.Coarsest; l-- {
			a := c.Parent(l)
			rs = append(rs, CellRange{a, a})
		}
	}
	return mergeRanges(rs)
}

func mergeRanges(rs []CellRange) []CellRange {
	slices.SortFunc(rs, func(a, b CellRange) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Lo <= out[n-1].Hi+1 {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Bound is the region of the sphere a query's documents must meet: r's
// shape, its cap, or for the plane's operators the longitude-latitude
// rectangle around them (a 2dsphere index holds only points whose pairs are
// a longitude and a latitude, and a flat shape contains such a point only
// inside its bounding box).
func (r *Region) Bound() s2.Region {
	switch r.kind {
	case regionCap:
		return r.cap
	case regionShape:
		var u s2.RegionUnion
		for _, p := range r.shape.Points {
			u = append(u, p)
		}
		for _, l := range r.shape.Lines {
			u = append(u, l)
		}
		for _, q := range r.shape.Polys {
			u = append(u, q)
		}
		return u
	}
	lo, hi := r.flatBox()
	rect := s2.EmptyRect()
	rect = rect.AddPoint(s2.LatLngFromDegrees(clamp(lo.Y, -90, 90), clamp(lo.X, -180, 180)))
	rect = rect.AddPoint(s2.LatLngFromDegrees(clamp(hi.Y, -90, 90), clamp(hi.X, -180, 180)))
	return rect
}

// flatBox is the bounding box of a plane region.
func (r *Region) flatBox() (lo, hi Flat) {
	switch r.kind {
	case regionBox:
		return r.lo, r.hi
	case regionCircle:
		return Flat{r.center.X - r.radius, r.center.Y - r.radius}, Flat{r.center.X + r.radius, r.center.Y + r.radius}
	}
	lo, hi = r.poly[0], r.poly[0]
	for _, p := range r.poly[1:] {
		lo = Flat{min(lo.X, p.X), min(lo.Y, p.Y)}
		hi = Flat{max(hi.X, p.X), max(hi.Y, p.Y)}
	}
	return lo, hi
}

func clamp(x, lo, hi float64) float64 { return max(lo, min(hi, x)) }
