package window

import (
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// boundKind is what one end of a window is.
type boundKind int

const (
	boundUnbounded boundKind = iota
	boundCurrent
	boundOffset
)

// bound is one end of a window: "unbounded", "current", or an offset, in
// documents or in the units of the sortBy field.
type bound struct {
	kind boundKind
	n    float64 // the offset; whole for document windows and time units
}

// windowBounds is the window of a window function, relative to the
// current document of a partition.
type windowBounds struct {
	byRange      bool
	unit         string // the time unit of a range, "" for a numeric range
	lower, upper bound
}

// wholePartition is the window of a function given none: every document
// of the partition.
var wholePartition = windowBounds{}

// timeUnitMillis are the time units of ranges and of $derivative and
// $integral, with their length where it is fixed.
var timeUnitMillis = map[string]int64{
	"year": 0, "quarter": 0, "month": 0,
	"week":        7 * 24 * 3600 * 1000,
	"day":         24 * 3600 * 1000,
	"hour":        3600 * 1000,
	"minute":      60 * 1000,
	"second":      1000,
	"millisecond": 1,
}

func failedToParse(format string, args ...any) error {
	return mongoerr.New(mongoerr.FailedToParse, format, args...)
}

// parseTimeUnit checks the name of a time unit.
func parseTimeUnit(v bson.RawValue) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", failedToParse("'unit' must be a string, but got %s", values.TypeNameOf(v))
	}
	if _, ok := timeUnitMillis[s]; !ok {
		return "", failedToParse("unknown time unit value: %s", s)
	}
	return s, nil
}

// parseWindow parses the window field of a window function, given the
// sortBy of the stage.
func (c *compiler) parseWindow(v bson.RawValue, sortBy []query.SortField) (windowBounds, error) {
	spec, ok := v.DocumentOK()
	if !ok {
		return wholePartition, failedToParse("'window' field must be an object")
	}
	elems, _ := spec.Elements()
	documents, errD := spec.LookupErr("documents")
	rng, errR := spec.LookupErr("range")
	unit, errU := spec.LookupErr("unit")
	hasDocs, hasRange, hasUnit := errD == nil, errR == nil, errU == nil
	switch {
	case hasDocs && hasRange:
		return wholePartition, failedToParse("Window bounds can specify either 'documents' or 'unit', not both.")
	case !hasRange && hasUnit:
		return wholePartition, failedToParse("Window bounds can only specify 'unit' with range-based bounds.")
	case !hasRange && !hasDocs:
		if len(elems) != 0 {
			return wholePartition, failedToParse("'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
		}
		return wholePartition, nil
	}
	if hasDocs {
		if len(elems) != 1 {
			return wholePartition, failedToParse("'window' field that specifies documents cannot have other fields")
		}
		lo, hi, err := c.boundPair(documents, func(v bsoncore.Value) (float64, error) {
			n, ok := bsonvalue.IntegerValue(v)
			if !ok || n != int64(int32(n)) {
				return 0, failedToParse("Numeric document-based bounds must be an integer")
			}
			return float64(n), nil
		})
		if err != nil {
			return wholePartition, err
		}
		b := windowBounds{lower: lo, upper: hi}
		if (lo.kind != boundUnbounded || hi.kind != boundUnbounded) && sortBy == nil {
			return wholePartition, mongoerr.New(mongoerr.Code(5339901), "Document-based bounds require a sortBy")
		}
		return b, nil
	}
	b := windowBounds{byRange: true}
	var err error
	if hasUnit {
		if len(elems) != 2 {
			return wholePartition, failedToParse("'window' field that specifies unit cannot have other fields besides 'range'")
		}
		if unit.Type != bson.TypeString {
			return wholePartition, failedToParse("'unit' must be a string")
		}
		if b.unit, err = parseTimeUnit(unit); err != nil {
			return wholePartition, err
		}
		b.lower, b.upper, err = c.boundPair(rng, func(v bsoncore.Value) (float64, error) {
			n, ok := bsonvalue.IntegerValue(v)
			if !ok {
				return 0, failedToParse("With 'unit', range-based bounds must be an integer")
			}
			return float64(n), nil
		})
	} else {
		if len(elems) != 1 {
			return wholePartition, failedToParse("'window' field that specifies range cannot have other fields besides 'unit'")
		}
		b.lower, b.upper, err = c.boundPair(rng, func(v bsoncore.Value) (float64, error) {
			if !values.IsNumeric(v) {
				return 0, failedToParse("Range-based bounds expression must be a number")
			}
			return values.ToFloat(v), nil
		})
	}
	if err != nil {
		return wholePartition, err
	}
	if len(sortBy) != 1 {
		return wholePartition, mongoerr.New(mongoerr.Code(5339902), "Range-based bounds require sortBy a single field")
	}
	if sortBy[0].Desc {
		return wholePartition, mongoerr.New(mongoerr.Code(8947401), "Range-based bounds require an ascending sortBy")
	}
	return b, nil
}

// boundPair parses [lower, upper], with number reading an offset, and
// checks that lower does not pass upper.
func (c *compiler) boundPair(v bson.RawValue, number func(bsoncore.Value) (float64, error)) (bound, bound, error) {
	arr, ok := v.ArrayOK()
	vals, _ := arr.Values()
	if !ok || len(vals) != 2 {
		return bound{}, bound{}, failedToParse("Window bounds must be a 2-element array: %s", v)
	}
	var bs [2]bound
	for i, e := range vals {
		if s, ok := e.StringValueOK(); ok {
			switch s {
			case "unbounded":
				bs[i] = bound{kind: boundUnbounded}
			case "current":
				bs[i] = bound{kind: boundCurrent}
			default:
				return bound{}, bound{}, failedToParse("Window bounds must be 'unbounded', 'current', or a number.")
			}
			continue
		}
		cv := bsoncore.Value{Type: bsoncore.Type(e.Type), Data: e.Value}
		if e.Type == bson.TypeEmbeddedDocument {
			// A constant expression, such as {$add: [1, 2]}.
			ex, err := c.expr(e)
			if err != nil {
				return bound{}, bound{}, err
			}
			if cv, err = ex.Eval(bson.Raw(values.EmptyDoc)); err != nil {
				return bound{}, bound{}, err
			}
		}
		n, err := number(cv)
		if err != nil {
			return bound{}, bound{}, err
		}
		bs[i] = bound{kind: boundOffset, n: n}
	}
	lo, hi := bs[0].n, bs[1].n
	if bs[0].kind != boundUnbounded && bs[1].kind != boundUnbounded && lo > hi {
		return bound{}, bound{}, mongoerr.New(mongoerr.Code(5339900), "Lower bound must not exceed upper bound: [%v, %v]", lo, hi)
	}
	return bs[0], bs[1], nil
}

// unbounded reports whether the window is the whole partition.
func (b windowBounds) unbounded() bool {
	return b.lower.kind == boundUnbounded && b.upper.kind == boundUnbounded
}

// endpoints returns the first and last index of the window of document i
// of p; ok is false when the window is empty.
func (b windowBounds) endpoints(p *partition, i int) (lo, hi int, ok bool, err error) {
	n := len(p.docs)
	if !b.byRange {
		lo, hi = 0, n-1
		if b.lower.kind != boundUnbounded {
			lo = i + int(b.lower.n)
		}
		if b.upper.kind != boundUnbounded {
			hi = i + int(b.upper.n)
		}
		lo, hi = max(lo, 0), min(hi, n-1)
		return lo, hi, lo <= hi, nil
	}
	vals, err := p.sortValues()
	if err != nil {
		return 0, 0, false, err
	}
	base := vals[i]
	if b.unit != "" {
		if base.Type != bsoncore.TypeDateTime {
			return 0, 0, false, mongoerr.New(mongoerr.Code(5429513), "Invalid range: Expected the sortBy field to be a Date, but it was %s", bsonvalue.TypeName(base.Type))
		}
	} else {
		if base.Type == bsoncore.TypeDateTime {
			return 0, 0, false, mongoerr.New(mongoerr.Code(5429413), "Invalid range: For windows that involve date or time ranges, a unit must be provided.")
		}
		if !values.IsNumeric(base) {
			return 0, 0, false, mongoerr.New(mongoerr.Code(5429414), "Invalid range: Expected the sortBy field to be a number, but it was %s", bsonvalue.TypeName(orNull(base).Type))
		}
	}
	expected := func(v bsoncore.Value) bool {
		if b.unit != "" {
			return v.Type == bsoncore.TypeDateTime
		}
		return values.IsNumeric(v)
	}
	// The documents are sorted by the field, so those of the expected type
	// are one run, and the window a part of it.
	// "current" is the current document itself, as in MongoDB, and not
	// its sortBy value: documents that tie with it are left out, where
	// an offset of 0 takes them in.
	cmp := func(j int, t bsoncore.Value) int { return keycodec.Compare(orNull(vals[j]), t) }
	switch b.lower.kind {
	case boundCurrent:
		lo = i
	case boundUnbounded:
		lo = sort.Search(n, func(j int) bool { return expected(vals[j]) || cmp(j, base) > 0 })
		if lo == n || !expected(vals[lo]) {
			return 0, 0, false, nil
		}
	default:
		t := b.add(base, b.lower.n)
		lo = sort.Search(n, func(j int) bool { return cmp(j, t) >= 0 })
		if lo == n || !expected(vals[lo]) {
			return 0, 0, false, nil
		}
	}
	switch b.upper.kind {
	case boundCurrent:
		hi = i
	case boundUnbounded:
		hi = max(lo, i) + sort.Search(n-max(lo, i), func(k int) bool { return !expected(vals[max(lo, i)+k]) }) - 1
	default:
		t := b.add(base, b.upper.n)
		k := lo + sort.Search(n-lo, func(k int) bool { return cmp(lo+k, t) > 0 })
		if k == lo {
			return 0, 0, false, nil
		}
		hi = k - 1
	}
	return lo, hi, lo <= hi, nil
}

// add is base moved by delta: a number, or a date moved by delta units.
func (b windowBounds) add(base bsoncore.Value, delta float64) bsoncore.Value {
	if b.unit == "" {
		f := values.ToFloat(base)
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f+delta)}
	}
	t := values.DateAdd(time.UnixMilli(base.DateTime()).UTC(), b.unit, int64(delta))
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, t.UnixMilli())}
}

// orNull is v, or null when v is missing.
func orNull(v bsoncore.Value) bsoncore.Value {
	if v.Type == 0 {
		return values.Null
	}
	return v
}
