package pipeline

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/mongoerr"
)

// fillStage is $fill: null and missing values of fields replaced by a
// value, by the last value before them (locf), or by linear interpolation
// between the values around them, in the order of sortBy within each
// partition.
type fillStage struct {
	partitionBy *expr.Expr   // nil without one
	partFields  [][]string   // partitionByFields
	sortBy      *query.Sort  // nil without one
	sortField   []string     // the single sortBy field, for linear
	outputs     []fillOutput // in the order given
}

type fillOutput struct {
	field  []string
	value  *expr.Expr // or
	method string     // "locf" or "linear"
}

func compileFill(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.FailedToParse, "$fill specification must be an object")
	}
	s := &fillStage{}
	var output bson.RawValue
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		var err error
		switch el.Key() {
		case "partitionBy":
			s.partitionBy, err = c.expr(v)
		case "partitionByFields":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, specError(mongoerr.TypeMismatch, "BSON field '$fill.partitionByFields' is the wrong type, expected type 'array'")
			}
			vals, _ := arr.Values()
			for _, f := range vals {
				name, ok := f.StringValueOK()
				if !ok {
					return nil, specError(mongoerr.TypeMismatch, "BSON field '$fill.partitionByFields' must hold strings")
				}
				p, err := fieldPath(name, false)
				if err != nil {
					return nil, err
				}
				s.partFields = append(s.partFields, p)
			}
		case "sortBy":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, specError(mongoerr.TypeMismatch, "BSON field '$fill.sortBy' is the wrong type, expected type 'object'")
			}
			if s.sortBy, err = query.CompileSortWith(d, c.opts.Collator); err == nil {
				fields, _ := d.Elements()
				if len(fields) == 1 {
					s.sortField, err = fieldPath(fields[0].Key(), false)
				}
			}
		case "output":
			output = v
		default:
			return nil, specError(40415, "BSON field '$fill.%s' is an unknown field.", el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	if s.partitionBy != nil && s.partFields != nil {
		return nil, specError(6050204, "Maximum one of 'partitionBy' and 'partitionByFields' can be specified in '$fill'")
	}
	if output.Type == 0 {
		return nil, specError(40414, "BSON field '$fill.output' is missing but a required field")
	}
	out, ok := output.DocumentOK()
	if !ok {
		return nil, specError(mongoerr.TypeMismatch, "BSON field '$fill.output' is the wrong type, expected type 'object'")
	}
	fields, _ := out.Elements()
	for _, f := range fields {
		path, err := fieldPath(f.Key(), false)
		if err != nil {
			return nil, err
		}
		o := fillOutput{field: path}
		d, ok := f.Value().DocumentOK()
		parts, _ := d.Elements()
		if !ok || len(parts) != 1 {
			return nil, specError(6050203, "Exactly one of 'value' or 'method' must be specified in '$fill' output field %s", f.Key())
		}
		switch parts[0].Key() {
		case "value":
			if o.value, err = c.expr(parts[0].Value()); err != nil {
				return nil, err
			}
		case "method":
			m, _ := parts[0].Value().StringValueOK()
			switch m {
			case "locf", "linear":
				o.method = m
			default:
				return nil, specError(6050202, "Method must be either 'locf' or 'linear', found %s", parts[0].Value())
			}
			if s.sortBy == nil {
				return nil, specError(6050201, "'sortBy' field is required if 'method' is used")
			}
			if m == "linear" && s.sortField == nil {
				return nil, specError(605001, "$linearFill requires exactly one sortBy field")
			}
		default:
			return nil, specError(40415, "BSON field '$fill.output.%s.%s' is an unknown field.", f.Key(), parts[0].Key())
		}
		s.outputs = append(s.outputs, o)
	}
	return s, nil
}

func (s *fillStage) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	// MongoDB runs the methods as a $setWindowFields, which sorts by
	// partition and sortBy, and the values as an $addFields after it.
	windowed := false
	for _, o := range s.outputs {
		windowed = windowed || o.method != ""
	}
	if !windowed {
		for _, o := range s.outputs {
			if err := s.fillField(r, docs, o); err != nil {
				return nil, err
			}
		}
		h := held{limit: out}
		return docs, h.add(sizeOf(docs))
	}
	var order []string
	parts := map[string][]int{}
	for i, d := range docs {
		k, err := s.partitionKey(r, d)
		if err != nil {
			return nil, err
		}
		if _, ok := parts[k]; !ok {
			order = append(order, k)
		}
		parts[k] = append(parts[k], i)
	}
	slices.Sort(order) // keys encode partition values in BSON order
	res := make([]bson.Raw, 0, len(docs))
	h := held{limit: out}
	for _, k := range order {
		idx := parts[k]
		group := make([]bson.Raw, len(idx))
		for j, i := range idx {
			group[j] = docs[i]
		}
		if s.sortBy != nil {
			if err := (&held{limit: r.blocking(SortExceeded)}).add(sizeOf(group)); err != nil {
				return nil, err
			}
			slices.SortStableFunc(group, s.sortBy.Compare)
		}
		for _, o := range s.outputs {
			if o.method != "" {
				if err := s.fillField(r, group, o); err != nil {
					return nil, err
				}
			}
		}
		for _, o := range s.outputs {
			if o.method == "" {
				if err := s.fillField(r, group, o); err != nil {
					return nil, err
				}
			}
		}
		for _, d := range group {
			if err := h.add(len(d)); err != nil {
				return nil, err
			}
		}
		res = append(res, group...)
	}
	return res, nil
}

// partitionKey is the key of d's partition; all documents share one
// without partitioning. Partitions are of values equal under the
// collation, as those of the $setWindowFields MongoDB runs $fill as.
func (s *fillStage) partitionKey(r *run, d bson.Raw) (string, error) {
	switch {
	case s.partitionBy != nil:
		v, err := values.EvalOrNull(r.ctx, s.partitionBy, d)
		if err != nil {
			return "", err
		}
		return string(keycodec.Append(nil, r.opts.Collator.Key(v))), nil
	case s.partFields != nil:
		var key []byte
		for _, p := range s.partFields {
			v := lookupPath(d, p)
			if v.Type == 0 {
				v = values.Null
			}
			key = keycodec.Append(key, r.opts.Collator.Key(v))
		}
		return string(key), nil
	}
	return "", nil
}

// fillField fills one output field over a sorted partition.
func (s *fillStage) fillField(r *run, group []bson.Raw, o fillOutput) error {
	switch o.method {
	case "":
		for i, d := range group {
			if !values.Nullish(lookupPath(d, o.field)) {
				continue
			}
			v, err := o.value.EvalContext(r.ctx, d)
			if err != nil {
				return err
			}
			if v.Type == 0 {
				continue
			}
			group[i] = values.SetPath(d, o.field, v)
		}
	case "locf":
		var last bsoncore.Value
		for i, d := range group {
			v := lookupPath(d, o.field)
			if !values.Nullish(v) {
				last = bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
				continue
			}
			fill := last
			if fill.Type == 0 {
				fill = values.Null
			}
			group[i] = values.SetPath(d, o.field, fill)
		}
	case "linear":
		return s.linear(group, o)
	}
	return nil
}

// linear interpolates null and missing values between the numbers around
// them, by the position of each document on the sortBy field; values
// before the first number or after the last one become null.
func (s *fillStage) linear(group []bson.Raw, o fillOutput) error {
	prev := -1
	for i := 0; i < len(group); i++ {
		v := lookupPath(group[i], o.field)
		if values.Nullish(v) {
			continue
		}
		if !values.IsNumeric(v) {
			return mongoerr.New(mongoerr.TypeMismatch, "Value to be filled with $linearFill must be numeric, found %s", values.TypeName(v))
		}
		if prev >= 0 && i > prev+1 {
			if err := s.interpolate(group, o, prev, i); err != nil {
				return err
			}
		} else if prev < 0 {
			for j := 0; j < i; j++ {
				group[j] = values.SetPath(group[j], o.field, values.Null)
			}
		}
		prev = i
	}
	start := prev + 1
	if prev < 0 {
		start = 0
	}
	for j := start; j < len(group); j++ {
		group[j] = values.SetPath(group[j], o.field, values.Null)
	}
	return nil
}

func (s *fillStage) interpolate(group []bson.Raw, o fillOutput, a, b int) error {
	x0, err := s.position(group[a])
	if err != nil {
		return err
	}
	x1, err := s.position(group[b])
	if err != nil {
		return err
	}
	y0 := values.ToFloat(lookupPath(group[a], o.field))
	y1 := values.ToFloat(lookupPath(group[b], o.field))
	for j := a + 1; j < b; j++ {
		x, err := s.position(group[j])
		if err != nil {
			return err
		}
		y := y0 + (y1-y0)*(x-x0)/(x1-x0)
		group[j] = values.SetPath(group[j], o.field, values.Double(y))
	}
	return nil
}

// position is the sortBy value of d as a number: dates count
// milliseconds.
func (s *fillStage) position(d bson.Raw) (float64, error) {
	v := lookupPath(d, s.sortField)
	switch {
	case v.Type == bsoncore.TypeDateTime:
		return float64(v.DateTime()), nil
	case values.IsNumeric(v):
		return values.ToFloat(v), nil
	}
	return 0, mongoerr.New(mongoerr.TypeMismatch, "$linearFill requires a numeric or date sortBy value, found %s", values.TypeName(v))
}
