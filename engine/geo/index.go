package geo

import (
	"math"
	"slices"

	"github.com/golang/geo/s2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
)

// The index types of a key pattern's string values.
const (
	Sphere = "2dsphere"
	Plane  = "2d"
)

// CantExtractGeoKeys is MongoDB's code for a document whose geo field a
// 2dsphere index cannot hold.
const CantExtractGeoKeys mongoerr.Code = 16755

// pointNotInInterval is MongoDB's code for a point outside a 2d index's
// bounds.
const pointNotInInterval mongoerr.Code = 13027

// badLocation and geoValuesNotPairs are MongoDB's codes for a 2d index's
// field that holds neither an array nor a document, and one that holds
// something else than pairs of numbers.
const (
	badLocation       mongoerr.Code = 16804
	geoValuesNotPairs mongoerr.Code = 13026
)

// Index is the geometry of one geo field of an index: its type and
// parameters.
type Index struct {
	Type   string // Sphere or Plane
	Params IndexParams
	// Bits, Min and Max are a 2d index's: the precision of its hashes and
	// the bounds of its coordinates.
	Bits     int
	Min, Max float64
}

// Option reads a numeric option of the index specification.
type Option func(name string) (float64, bool)

// NewIndex validates the options of a geo index of type typ.
func NewIndex(typ string, opt Option) (*Index, error) {
	ix := &Index{Type: typ}
	switch typ {
	case Sphere:
		version := 3
		if v, ok := opt("2dsphereIndexVersion"); ok {
			if v != 1 && v != 2 && v != 3 {
				return nil, mongoerr.New(17395, "unsupported geo index version { 2dsphereIndexVersion : %v }, only support versions: [1,2,3]", v)
			}
			version = int(v)
		}
		ix.Params = DefaultParams(version)
		if v, ok := opt("finestIndexedLevel"); ok {
			ix.Params.Finest = int(v)
		}
		if v, ok := opt("coarsestIndexedLevel"); ok {
			ix.Params.Coarsest = int(v)
		}
		if err := CheckParams(ix.Params); err != nil {
			return nil, err
		}
	case Plane:
		ix.Bits, ix.Min, ix.Max = 26, -180, 180
		if v, ok := opt("bits"); ok {
			if v < 1 || v > 32 {
				return nil, mongoerr.New(mongoerr.InvalidOptions, "bits for hash must be > 0 and <= 32, but %v bits were specified", v)
			}
			ix.Bits = int(v)
		}
		if v, ok := opt("min"); ok {
			ix.Min = v
		}
		if v, ok := opt("max"); ok {
			ix.Max = v
		}
		if !(ix.Min < ix.Max) {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "region for hash must be valid and have positive area, but [%v, %v] was specified", ix.Min, ix.Max)
		}
	default:
		return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Index type '%s' is not supported", typ)
	}
	return ix, nil
}

// Keys are the index keys of the value a document holds in the geo field:
// nil for a missing or null value (the field is sparse), an error for a
// value the index cannot hold. A 2dsphere key is a cell id, a 2d key a
// hash of the plane; both are int64s, ordered as the keys compare.
func (ix *Index) Keys(vals []bsoncore.Value) ([]int64, error) {
	var keys []int64
	for _, v := range vals {
		if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			continue
		}
		if ix.Type == Plane {
			ks, err := ix.planeKeys(v)
			if err != nil {
				return nil, err
			}
			keys = append(keys, ks...)
			continue
		}
		gs, err := ParseShapes(v)
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			if !g.OnSphere {
				return nil, badValue("longitude/latitude is out of bounds, lng: %v lat: %v", g.Flat.X, g.Flat.Y)
			}
			for _, c := range ix.Params.Cells(g) {
				keys = append(keys, int64(c))
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// ParseShapes parses a geo field's value: one shape, or an array of them
// (a document with several locations) unless the array is a legacy pair.
func ParseShapes(v bsoncore.Value) ([]*Geometry, error) {
	if v.Type == bsoncore.TypeArray {
		if _, ok := LegacyPoint(v); !ok {
			vals, _ := bsoncore.Array(v.Data).Values()
			out := make([]*Geometry, 0, len(vals))
			for _, e := range vals {
				g, err := ParseStored(e)
				if err != nil {
					return nil, err
				}
				out = append(out, g)
			}
			return out, nil
		}
	}
	g, err := ParseStored(v)
	if err != nil {
		return nil, err
	}
	return []*Geometry{g}, nil
}

// planeKeys are the 2d keys of a field's value: a legacy pair, or an array
// of them (several locations). A 2d index holds nothing else, GeoJSON
// included, as MongoDB's.
func (ix *Index) planeKeys(v bsoncore.Value) ([]int64, error) {
	if v.Type != bsoncore.TypeArray && v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(badLocation, "location object expected, location array not in correct format")
	}
	pairs := []bsoncore.Value{v}
	if _, ok := LegacyPoint(v); !ok && v.Type == bsoncore.TypeArray {
		pairs, _ = bsoncore.Array(v.Data).Values()
	}
	keys := make([]int64, 0, len(pairs))
	for _, p := range pairs {
		f, ok := LegacyPoint(p)
		if !ok {
			return nil, mongoerr.New(geoValuesNotPairs, "geo values must be 'legacy coordinate pairs' for 2d indexes")
		}
		k, err := ix.hash(f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// cellsPerAxis is how many cells a 2d index cuts each axis into.
func (ix *Index) cellsPerAxis() float64 { return math.Exp2(float64(ix.Bits)) }

// hash is the 2d key of f: the bits of its cell's x and y, interleaved.
func (ix *Index) hash(f Flat) (int64, error) {
	if f.X < ix.Min || f.X >= ix.Max || f.Y < ix.Min || f.Y >= ix.Max {
		return 0, mongoerr.New(pointNotInInterval, "point not in interval of [ %v, %v ) :: caused by :: [ %v, %v ]", ix.Min, ix.Max, f.X, f.Y)
	}
	x, y := ix.cell(f.X), ix.cell(f.Y)
	return int64(interleave(x, y, ix.Bits)), nil
}

func (ix *Index) cell(c float64) uint64 {
	n := ix.cellsPerAxis()
	v := math.Floor((c - ix.Min) / (ix.Max - ix.Min) * n)
	return uint64(clamp(v, 0, n-1))
}

func interleave(x, y uint64, bits int) uint64 {
	var h uint64
	for i := bits - 1; i >= 0; i-- {
		h = h<<2 | (x>>uint(i)&1)<<1 | y>>uint(i)&1
	}
	return h
}

// KeyRange is an inclusive range of keys.
type KeyRange struct{ Lo, Hi int64 }

// maxRanges bounds the ranges of a 2d scan: finer cells would scan fewer
// keys, at the cost of more seeks.
const maxRanges = 64

// RegionRanges are the key ranges a scan for documents meeting r reads;
// ok is false when the index cannot serve r (a 2d index and a shape on the
// sphere), which then needs a collection scan.
func (ix *Index) RegionRanges(r *Region) (rs []KeyRange, ok bool) {
	if ix.Type == Plane {
		if !r.Flat() {
			return nil, false
		}
		lo, hi := r.flatBox()
		return ix.boxRanges(lo, hi), true
	}
	return cellRanges(ix.Params.Ranges(r.Bound())), true
}

// NearRings are the rings of a near scan: each call to Next gives the key
// ranges that hold the documents within a radius of the near point which
// the rings before it did not read.
type NearRings struct {
	ix    *Index
	n     *Near
	inner s2.CellUnion       // the cells read so far
	done  map[s2.CellID]bool // the ancestors read so far
}

// NearRings starts the rings of n over the index.
func (ix *Index) NearRings(n *Near) *NearRings {
	return &NearRings{ix: ix, n: n, done: map[s2.CellID]bool{}}
}

// Next returns the ranges of the ring out to radius (in n's units): on a
// 2d index, a box's, which may hold keys read before.
func (r *NearRings) Next(radius float64) []KeyRange {
	ix, n := r.ix, r.n
	if ix.Type == Plane {
		d := min(radius, 2*(ix.Max-ix.Min))
		return ix.boxRanges(Flat{n.Flat.X - d, n.Flat.Y - d}, Flat{n.Flat.X + d, n.Flat.Y + d})
	}
	outer := ix.Params.Covering(n.Cap(radius))
	rs := ix.Params.AnnulusRanges(r.inner, outer, r.done)
	r.inner = s2.CellUnionFromUnion(r.inner, outer)
	return cellRanges(rs)
}

func cellRanges(rs []CellRange) []KeyRange {
	out := make([]KeyRange, len(rs))
	for i, r := range rs {
		out[i] = KeyRange{int64(r.Lo), int64(r.Hi)}
	}
	return out
}

// boxRanges covers the plane box [lo, hi] with quadtree cells of the 2d
// hash, refined level by level while there are few enough.
func (ix *Index) boxRanges(lo, hi Flat) []KeyRange {
	type cell struct {
		level  int
		x, y   uint64 // at level
		prefix uint64
	}
	x0, y0 := ix.cell(clamp(lo.X, ix.Min, ix.Max)), ix.cell(clamp(lo.Y, ix.Min, ix.Max))
	x1, y1 := ix.cell(clamp(hi.X, ix.Min, ix.Max)), ix.cell(clamp(hi.Y, ix.Min, ix.Max))
	cells := []cell{{}}
	for level := 0; level < ix.Bits; level++ {
		var next []cell
		for _, c := range cells {
			for q := uint64(0); q < 4; q++ {
				nc := cell{level: level + 1, x: c.x<<1 | q>>1, y: c.y<<1 | q&1, prefix: c.prefix<<2 | q}
				shift := uint(ix.Bits - nc.level)
				if nc.x<<shift > x1 || (nc.x+1)<<shift-1 < x0 || nc.y<<shift > y1 || (nc.y+1)<<shift-1 < y0 {
					continue
				}
				next = append(next, nc)
			}
		}
		if len(next) > maxRanges {
			break
		}
		cells = next
	}
	rs := make([]KeyRange, 0, len(cells))
	for _, c := range cells {
		shift := uint(2 * (ix.Bits - c.level))
		rs = append(rs, KeyRange{int64(c.prefix << shift), int64((c.prefix+1)<<shift - 1)})
	}
	return rs
}
