package pipeline

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/query"
)

// windowStage is $setWindowFields: fields computed for each document from
// the documents of its partition, in sortBy order, within a window of
// positions or of sortBy values around it.
//
// MongoDB sorts the input by partition and sortBy; so does Lethe, and it
// computes each field from the documents as they came in.
type windowStage struct {
	partitionBy *expr.Expr  // nil: one partition
	sortBy      *query.Sort // nil without one
	sortField   []string    // the sortBy field when there is one, for range windows
	sortDesc    bool
	outputs     []windowOutput
}

// windowOutput is one output field.
type windowOutput struct {
	field []string
	fn    windowFunc
	win   windowBounds
}

// windowFunc computes one output field over a sorted partition.
type windowFunc interface {
	// values sets out[i] for each document of the partition; win gives
	// the window of each position.
	values(r *run, w *windowStage, docs []bson.Raw, win func(i int) (int, int, error), out []bsoncore.Value) error
}

// windowBounds is a window: of positions relative to the current document
// (documents), or of sortBy values relative to its own (range). Unbounded
// ends are nil.
type windowBounds struct {
	isRange  bool
	lo, hi   *bsoncore.Value // offsets; Type 0 means "current"
	unit     string          // of range offsets on dates
	explicit bool            // a window was given
}

func compileSetWindowFields(c *compiler, name string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.FailedToParse, "the %s stage specification must be an object", name)
	}
	s := &windowStage{}
	var output bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "partitionBy":
			ex, err := c.expr(v)
			if err != nil {
				return nil, err
			}
			s.partitionBy = ex
		case "sortBy":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, specError(mongoerr.TypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", typeName(bsoncore.Value{Type: bsoncore.Type(v.Type)}))
			}
			srt, err := query.CompileSort(d)
			if err != nil {
				return nil, err
			}
			s.sortBy = srt
			if f := srt.Fields(); len(f) == 1 {
				s.sortField, s.sortDesc = strings.Split(f[0].Path, "."), f[0].Desc
			}
		case "output":
			output = v
		default:
			return nil, specError(40415, "BSON field '$setWindowFields.%s' is an unknown field.", el.Key())
		}
	}
	if output.Type == 0 {
		return nil, specError(40414, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	out, ok := output.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.TypeMismatch, "BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'", typeName(bsoncore.Value{Type: bsoncore.Type(output.Type)}))
	}
	fields, _ := out.Elements()
	for _, f := range fields {
		path, err := fieldPath(f.Key(), false)
		if err != nil {
			return nil, err
		}
		o, err := c.windowOutput(s, f.Value())
		if err != nil {
			return nil, err
		}
		o.field = path
		s.outputs = append(s.outputs, o)
	}
	return s, nil
}

func (*windowStage) blocks() {}

func (s *windowStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	if err := (&held{limit: r.blocking(SortExceeded)}).add(sizeOf(docs)); err != nil {
		return nil, err
	}
	type keyed struct {
		key string
		doc bson.Raw
	}
	entries := make([]keyed, len(docs))
	for i, d := range docs {
		k := ""
		if s.partitionBy != nil {
			v, err := evalOrNull(r.ctx, s.partitionBy, d)
			if err != nil {
				return nil, err
			}
			if v.Type == bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
			}
			k = string(keycodec.Append(nil, v))
		}
		entries[i] = keyed{key: k, doc: d}
	}
	slices.SortStableFunc(entries, func(a, b keyed) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		if s.sortBy == nil {
			return 0
		}
		return s.sortBy.Compare(a.doc, b.doc)
	})
	h := held{limit: out}
	res := make([]bson.Raw, 0, len(docs))
	for start := 0; start < len(entries); {
		end := start + 1
		for end < len(entries) && entries[end].key == entries[start].key {
			end++
		}
		part := make([]bson.Raw, end-start)
		for i := range part {
			part[i] = entries[start+i].doc
		}
		made, err := s.partition(r, part)
		if err != nil {
			return nil, err
		}
		for _, d := range made {
			if err := h.add(len(d)); err != nil {
				return nil, err
			}
		}
		res = append(res, made...)
		start = end
	}
	return res, nil
}

// partition computes the outputs of one sorted partition.
func (s *windowStage) partition(r *run, docs []bson.Raw) ([]bson.Raw, error) {
	vals := make([][]bsoncore.Value, len(s.outputs))
	for k, o := range s.outputs {
		vals[k] = make([]bsoncore.Value, len(docs))
		win := s.windowOf(docs, o.win)
		if err := o.fn.values(r, s, docs, win, vals[k]); err != nil {
			return nil, err
		}
	}
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		doc := []byte(d)
		for k, o := range s.outputs {
			v := vals[k][i]
			if v.Type == 0 {
				v = nullValue
			}
			doc = setPath(doc, o.field, v)
		}
		if len(doc) > MaxDocBytes {
			return nil, docTooLarge(len(doc), "_id")
		}
		out[i] = doc
	}
	return out, nil
}

// windowOf returns the window of each position: the first and last
// positions in it, first > last when it is empty.
func (s *windowStage) windowOf(docs []bson.Raw, b windowBounds) func(int) (int, int, error) {
	n := len(docs)
	if !b.isRange {
		return func(i int) (int, int, error) {
			lo, hi := 0, n-1
			if b.lo != nil {
				lo = i + offset(*b.lo)
			}
			if b.hi != nil {
				hi = i + offset(*b.hi)
			}
			return max(lo, 0), min(hi, n-1), nil
		}
	}
	return func(i int) (int, int, error) {
		x := lookupPath(docs[i], s.sortField)
		if err := s.checkRangeValue(x, b); err != nil {
			return 0, 0, err
		}
		var lo, hi bsoncore.Value
		if b.lo != nil {
			lo = s.shiftValue(x, *b.lo, b.unit)
		}
		if b.hi != nil {
			hi = s.shiftValue(x, *b.hi, b.unit)
		}
		in := func(j int) bool {
			y := lookupPath(docs[j], s.sortField)
			if b.lo != nil && keycodec.Compare(y, lo) < 0 {
				return false
			}
			return b.hi == nil || keycodec.Compare(y, hi) <= 0
		}
		if s.sortDesc {
			in = func(j int) bool {
				y := lookupPath(docs[j], s.sortField)
				if b.lo != nil && keycodec.Compare(y, lo) > 0 {
					return false
				}
				return b.hi == nil || keycodec.Compare(y, hi) >= 0
			}
		}
		first, last := -1, -2
		for j := range docs {
			if in(j) {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		if first < 0 {
			return 1, 0, nil
		}
		return first, last, nil
	}
}

func offset(v bsoncore.Value) int {
	if v.Type == 0 {
		return 0
	}
	n, _ := v.AsInt64OK()
	return int(n)
}

// checkRangeValue refuses a sortBy value a range window cannot use.
func (s *windowStage) checkRangeValue(x bsoncore.Value, b windowBounds) error {
	switch {
	case b.unit != "" && x.Type != bsoncore.TypeDateTime:
		return mongoerr.New(5429513, "Invalid range: Expected the sortBy field to be a Date, but it was %s", typeName(x))
	case b.unit == "" && !isNumeric(x):
		return mongoerr.New(5429414, "Invalid range: Expected the sortBy field to be a number, but it was %s", typeName(x))
	}
	return nil
}

// shiftValue is x moved by an offset, in the direction of the sort.
func (s *windowStage) shiftValue(x, off bsoncore.Value, unit string) bsoncore.Value {
	if off.Type == 0 {
		return x
	}
	if s.sortDesc {
		off = negate(off)
	}
	if unit == "" {
		return addNumbers(x, off)
	}
	n, _ := off.AsInt64OK()
	return dateValue(dateAdd(timeOf(x), unit, n))
}

// negate is -v for a number.
func negate(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64Value(-int64(v.Int32()))
	case bsoncore.TypeInt64:
		return int64Value(-v.Int64())
	}
	return doubleValue(-toFloat(v))
}
