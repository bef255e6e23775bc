package pipeline

import (
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// densifyStage is $densify: documents added where a sequence of numbers or
// dates has gaps, on a grid of steps from a lower bound, in each partition.
//
// As MongoDB does, it sorts its input first: by the partition fields and
// the field, or with "full" bounds by the field alone, and it leaves
// documents whose field is null or missing alone.
type densifyStage struct {
	field      []string
	partitions [][]string
	step       bsoncore.Value
	unit       string // "" for numbers
	bounds     string // "full", "partition" or "" for explicit lo, hi
	lo, hi     bsoncore.Value
	sort       *query.Sort
	coll       *collation.Collator // partition values are one when equal under it
}

// maxDensifyDocs bounds the documents one $densify makes, as MongoDB's
// internalQueryMaxAllowedDensifyDocs does.
const maxDensifyDocs = 500000

// timeUnits are the units of date steps.
var timeUnits = map[string]bool{
	"millisecond": true, "second": true, "minute": true, "hour": true, "day": true,
	"week": true, "month": true, "quarter": true, "year": true,
}

func compileDensify(c *compiler, name string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.FailedToParse, "The %s stage specification must be an object, found %s", name, values.TypeName(bsoncore.Value{Type: bsoncore.Type(arg.Type)}))
	}
	s := &densifyStage{}
	var field string
	var rng, parts bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "field":
			f, ok := el.Value().StringValueOK()
			if !ok {
				return nil, specError(mongoerr.TypeMismatch, "BSON field '$densify.field' is the wrong type '%s', expected type 'string'", values.TypeName(bsoncore.Value{Type: bsoncore.Type(el.Value().Type)}))
			}
			field = f
		case "range":
			rng = el.Value()
		case "partitionByFields":
			parts = el.Value()
		default:
			return nil, specError(40415, "BSON field '$densify.%s' is an unknown field.", el.Key())
		}
	}
	if field == "" && rng.Type == 0 {
		return nil, specError(40414, "BSON field '$densify.field' is missing but a required field")
	}
	if rng.Type == 0 {
		return nil, specError(40414, "BSON field '$densify.range' is missing but a required field")
	}
	var err error
	if s.field, err = fieldPath(field, false); err != nil {
		return nil, err
	}
	if err := s.parseRange(rng); err != nil {
		return nil, err
	}
	sortSpec := bsoncore.NewDocumentBuilder()
	if parts.Type != 0 {
		arr, ok := parts.ArrayOK()
		if !ok {
			return nil, specError(mongoerr.TypeMismatch, "BSON field '$densify.partitionByFields' is the wrong type, expected type 'array'")
		}
		vals, _ := arr.Values()
		for _, v := range vals {
			p, ok := v.StringValueOK()
			if !ok {
				return nil, specError(mongoerr.TypeMismatch, "BSON field '$densify.partitionByFields' must hold strings")
			}
			if strings.HasPrefix(p, field) {
				return nil, specError(8993000, "partitionByFields '%s' cannot include field '%s' that is being densified.", p, field)
			}
			if strings.HasPrefix(field, p) {
				return nil, specError(9554500, "field '%s' that is being densified cannot include partitionByFields '%s'.", field, p)
			}
			path, err := fieldPath(p, false)
			if err != nil {
				return nil, err
			}
			s.partitions = append(s.partitions, path)
			if s.bounds != "full" {
				sortSpec.AppendInt32(p, 1)
			}
		}
	}
	if s.bounds == "partition" && len(s.partitions) == 0 {
		return nil, specError(5733408, "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.")
	}
	sortSpec.AppendInt32(field, 1)
	// Partitions are of values equal under the collation, which the sort
	// MongoDB puts before $densify orders by, and which its partition
	// table compares with (getValueComparator().makeUnorderedValueMap in
	// document_source_densify.h).
	s.coll = c.opts.Collator
	if s.sort, err = query.CompileSortWith(bson.Raw(sortSpec.Build()), s.coll); err != nil {
		return nil, err
	}
	return s, nil
}

// parseRange reads {step, unit, bounds}.
func (s *densifyStage) parseRange(rng bson.RawValue) error {
	spec, ok := rng.DocumentOK()
	if !ok {
		return specError(mongoerr.TypeMismatch, "BSON field '$densify.range' is the wrong type '%s', expected type 'object'", values.TypeName(bsoncore.Value{Type: bsoncore.Type(rng.Type)}))
	}
	var step, unit, bounds bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "step":
			step = el.Value()
		case "unit":
			unit = el.Value()
		case "bounds":
			bounds = el.Value()
		default:
			return specError(40415, "BSON field '$densify.range.%s' is an unknown field.", el.Key())
		}
	}
	if step.Type == 0 {
		return specError(40414, "BSON field '$densify.range.step' is missing but a required field")
	}
	if bounds.Type == 0 {
		return specError(40414, "BSON field '$densify.range.bounds' is missing but a required field")
	}
	s.step = bsoncore.Value{Type: bsoncore.Type(step.Type), Data: step.Value}
	if !values.IsNumeric(s.step) || !(values.ToFloat(s.step) > 0) {
		return specError(5733401, "The step parameter in a range statement must be a strictly positive numeric value")
	}
	if unit.Type != 0 {
		u, ok := unit.StringValueOK()
		if !ok {
			return specError(mongoerr.TypeMismatch, "BSON field '$densify.range.unit' is the wrong type, expected type 'string'")
		}
		if !timeUnits[u] {
			return specError(mongoerr.FailedToParse, "unknown time unit value: %s", u)
		}
		if _, ok := bsonvalue.IntegerValue(s.step); !ok {
			return specError(6586400, "The step parameter in a range statement must be a whole number when densifying a date range")
		}
		s.unit = u
	}
	switch bounds.Type {
	case bson.TypeString:
		switch b := bounds.StringValue(); b {
		case "full", "partition":
			s.bounds = b
		default:
			return specError(5946802, "Bounds string must either be 'full' or 'partition'")
		}
	case bson.TypeArray:
		vals, _ := bounds.Array().Values()
		if len(vals) != 2 {
			return specError(5733403, "A bounding array in a range statement must have exactly two elements")
		}
		lo := bsoncore.Value{Type: bsoncore.Type(vals[0].Type), Data: vals[0].Value}
		hi := bsoncore.Value{Type: bsoncore.Type(vals[1].Type), Data: vals[1].Value}
		if keycodec.Compare(lo, hi) > 0 {
			return specError(5733402, "A bounding array must be an ascending array of either two dates or two numbers")
		}
		switch {
		case values.IsNumeric(lo):
			if s.unit != "" {
				return specError(5733409, "Numeric bounds may not have unit parameter")
			}
			if !values.IsNumeric(hi) {
				return specError(5733406, "A bounding array must contain either both dates or both numeric types")
			}
		case lo.Type == bsoncore.TypeDateTime:
			if hi.Type != bsoncore.TypeDateTime {
				return specError(5733405, "A bounding array must contain either both dates or both numeric types")
			}
			if s.unit == "" {
				return specError(5733410, "A bounding array of dates must be specified with a unit")
			}
		default:
			return specError(5733402, "A bounding array must be an ascending array of either two dates or two numbers")
		}
		s.lo, s.hi = lo, hi
	default:
		return specError(5733404, "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates")
	}
	return nil
}

func (*densifyStage) blocks() {}

// densifyPartition is the state of one partition.
type densifyPartition struct {
	fields []byte         // the partition's fields of its first document
	next   bsoncore.Value // the next value of the grid; Type 0 before the first
}

func (s *densifyStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	h := held{limit: r.blocking(SortExceeded)}
	if err := h.add(sizeOf(docs)); err != nil {
		return nil, err
	}
	slices.SortStableFunc(docs, s.sort.Compare)
	// The range of "full" bounds is that of every document.
	lo, hi, inclusive := s.lo, s.hi, false
	if s.bounds == "full" {
		lo, hi, inclusive = bsoncore.Value{}, bsoncore.Value{}, true
		for _, d := range docs {
			v := lookupPath(d, s.field)
			if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
				continue
			}
			if lo.Type == 0 {
				lo = v
			}
			hi = v
		}
	}
	res := make([]bson.Raw, 0, len(docs))
	made := 0
	emitted := held{limit: out}
	emit := func(fields []byte, v bsoncore.Value) error {
		if made++; made > maxDensifyDocs {
			return mongoerr.New(5897900, "Generated %d documents in $densify, which is over the limit of %d. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents", made, maxDensifyDocs)
		}
		if made%256 == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		d := bson.Raw(values.SetPath(fields, s.field, v))
		res = append(res, d)
		return emitted.add(len(d))
	}
	// fill makes the documents of p's grid below v (or up to v when
	// through), within the upper bound, starting each from fields. As in
	// MongoDB, those of a gap take the partition fields of the document
	// after it, those after a partition's last document its first one's:
	// they differ when values equal under the collation differ in case.
	fill := func(p *densifyPartition, fields []byte, v bsoncore.Value, through bool) error {
		for p.next.Type != 0 {
			if hi.Type != 0 {
				if c := keycodec.Compare(p.next, hi); c > 0 || c == 0 && !inclusive {
					return nil
				}
			}
			if v.Type != 0 {
				if c := keycodec.Compare(p.next, v); c > 0 || c == 0 && !through {
					return nil
				}
			}
			if err := emit(fields, p.next); err != nil {
				return err
			}
			p.next = s.increment(p.next)
		}
		return nil
	}
	parts := map[string]*densifyPartition{}
	var order []*densifyPartition
	for _, d := range docs {
		v := lookupPath(d, s.field)
		if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			res = append(res, d)
			continue
		}
		if err := s.check(v); err != nil {
			return nil, err
		}
		key, fields := s.partitionOf(d)
		p := parts[key]
		if p == nil {
			p = &densifyPartition{fields: fields}
			parts[key] = p
			order = append(order, p)
			switch {
			case s.bounds == "partition":
				p.next = v
			default:
				p.next = lo
			}
		}
		if err := fill(p, fields, v, false); err != nil {
			return nil, err
		}
		res = append(res, d)
		// The grid goes on from the first of its values above v.
		for p.next.Type != 0 && keycodec.Compare(p.next, v) <= 0 {
			if !inclusive && hi.Type != 0 && keycodec.Compare(p.next, hi) >= 0 {
				break // past the bounds: nothing more to make
			}
			p.next = s.increment(p.next)
		}
	}
	if s.bounds != "partition" {
		for _, p := range order {
			if err := fill(p, p.fields, bsoncore.Value{}, false); err != nil {
				return nil, err
			}
		}
		if len(order) == 0 && s.bounds == "" && len(s.partitions) == 0 {
			// Explicit bounds densify an empty input too.
			p := &densifyPartition{fields: values.EmptyDoc, next: lo}
			if err := fill(p, p.fields, bsoncore.Value{}, false); err != nil {
				return nil, err
			}
		}
	}
	return res, nil
}

// check refuses a value that is not of the kind the step is for.
func (s *densifyStage) check(v bsoncore.Value) error {
	switch {
	case !values.IsNumeric(v) && v.Type != bsoncore.TypeDateTime:
		return mongoerr.New(5733201, "Densify field type must be numeric or a date")
	case s.unit != "" && v.Type != bsoncore.TypeDateTime:
		return mongoerr.New(6053600, "Encountered non-date value in collection when step has a date unit.")
	case s.unit == "" && v.Type == bsoncore.TypeDateTime:
		return mongoerr.New(6053600, "Encountered date value in collection when step does not have a date unit.")
	}
	return nil
}

// partitionOf is the key of d's partition and the document of its
// partition fields.
func (s *densifyStage) partitionOf(d bson.Raw) (string, []byte) {
	var key []byte
	fields := values.EmptyDoc
	for _, p := range s.partitions {
		v := lookupPath(d, p)
		if v.Type == 0 {
			key = append(key, 0)
			continue
		}
		key = keycodec.Append(append(key, 1), s.coll.Key(v))
		fields = values.SetPath(fields, p, v)
	}
	return string(key), fields
}

// increment is v plus the step, in numbers as $add makes them or in
// dates by the unit.
func (s *densifyStage) increment(v bsoncore.Value) bsoncore.Value {
	if s.unit == "" {
		return addNumbers(v, s.step)
	}
	n, _ := bsonvalue.IntegerValue(s.step)
	t := time.UnixMilli(v.DateTime()).UTC()
	return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, values.DateAdd(t, s.unit, n).UnixMilli())}
}

// addNumbers adds two numbers with $add's result type.
func addNumbers(a, b bsoncore.Value) bsoncore.Value {
	var sum values.Sum
	sum.Add(a)
	sum.Add(b)
	return sum.Value()
}
