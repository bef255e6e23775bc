package pipeline

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/pipeline/accum"
	"github.com/lethedb/lethe/engine/pipeline/internal/values"
	"github.com/lethedb/lethe/mongoerr"
)

// bucketAutoStage is $bucketAuto: the documents sorted by a value and cut
// into a number of buckets of about the same size, equal values never
// split, boundaries optionally rounded to a series of preferred numbers.
type bucketAutoStage struct {
	groupBy *expr.Expr
	buckets int
	accs    []accField
	round   *rounder
}

func compileBucketAuto(c *compiler, _ string, arg bson.RawValue) (stage, error) {
	spec, ok := arg.DocumentOK()
	if !ok {
		return nil, specError(40240, "The argument to $bucketAuto must be an object, but found type: %s", bsonvalue.TypeName(bsoncore.Type(arg.Type)))
	}
	s := &bucketAutoStage{}
	var output bson.RawValue
	haveBuckets := false
	elems, _ := spec.Elements()
	for _, el := range elems {
		v := el.Value()
		var err error
		switch el.Key() {
		case "groupBy":
			s.groupBy, err = c.groupByExpr(v, 40239, "$bucketAuto")
		case "buckets":
			bv := bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}
			if !values.IsNumeric(bv) {
				return nil, specError(40241, "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s", bsonvalue.TypeName(bv.Type))
			}
			n, ok := bsonvalue.IntegerValue(bv)
			if !ok || n != int64(int32(n)) {
				return nil, specError(40242, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found %s", v)
			}
			if n <= 0 {
				return nil, specError(40243, "The $bucketAuto 'buckets' field must be greater than 0, but found: %d", n)
			}
			s.buckets, haveBuckets = int(n), true
		case "output":
			if v.Type != bson.TypeEmbeddedDocument {
				return nil, specError(40244, "The $bucketAuto 'output' field must be an object, but found type: %s", bsonvalue.TypeName(bsoncore.Type(v.Type)))
			}
			output = v
		case "granularity":
			name, ok := v.StringValueOK()
			if !ok {
				return nil, specError(40261, "The $bucketAuto 'granularity' field must be a string, but found type: %s", bsonvalue.TypeName(bsoncore.Type(v.Type)))
			}
			if s.round, err = rounderOf(name); err != nil {
				return nil, err
			}
		default:
			return nil, specError(40245, "Unrecognized option to $bucketAuto: %s", el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	if s.groupBy == nil || !haveBuckets {
		return nil, specError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	var err error
	if s.accs, err = c.outputAccs(output); err != nil {
		return nil, err
	}
	return s, nil
}

func (*bucketAutoStage) blocks() {}

// keyed is a document, its groupBy value and the value's collation key,
// by which the documents sort.
type keyed struct {
	key, ck bsoncore.Value
	doc     bson.Raw
}

func (s *bucketAutoStage) apply(r *run, docs []bson.Raw, _ Limit) ([]bson.Raw, error) {
	return s.stream(r, Slice(docs))
}

// stream sorts the documents of src in memory, holding them within the
// limit of a blocking stage as MongoDB's sorter of $bucketAuto does, and
// cuts them into buckets.
func (s *bucketAutoStage) stream(r *run, src Source) ([]bson.Raw, error) {
	h := held{limit: r.blocking(SortExceeded)}
	var entries []keyed
	j := 0
	err := src(func(d bson.Raw) error {
		if j++; j%256 == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		v, err := s.key(r, d)
		if err != nil {
			return err
		}
		v = values.Own(v, d)
		ck, extra := v, 0
		if r.opts.Collator != nil && collation.Collatable(v) {
			ck = r.opts.Collator.Key(v)
			extra = len(ck.Data)
		}
		if err := h.add(len(d) + len(v.Data) + extra); err != nil {
			return err
		}
		entries = append(entries, keyed{key: v, ck: ck, doc: d})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// As MongoDB's $bucketAuto sorts with the ExpressionContext's
	// ValueComparator, values sort, and are equal, under the collation.
	slices.SortStableFunc(entries, func(a, b keyed) int { return keycodec.Compare(a.ck, b.ck) })
	var out []bson.Raw
	b := s.bucketer(r, len(entries), &h, func(d bson.Raw) error {
		out = append(out, d)
		return nil
	})
	for _, e := range entries {
		if err := b.add(e.key, e.doc); err != nil {
			return nil, err
		}
	}
	return out, b.end()
}

// key is the groupBy value of doc.
func (s *bucketAutoStage) key(r *run, doc bson.Raw) (bsoncore.Value, error) {
	v, err := values.EvalOrNull(r.ctx, s.groupBy, doc)
	if err == nil && s.round != nil {
		err = checkGranularityKey(v)
	}
	return v, err
}

// bucketer cuts the n documents of a $bucketAuto, which come sorted by
// their groupBy value, into buckets as they come, holding only the bucket
// it fills: each bucket but the last takes about n/buckets documents, and
// then those equal to its last (or, with a granularity, below its rounded
// upper bound), which a bucket ends at the first document past them.
type bucketer struct {
	s     *bucketAutoStage
	r     *run
	size  int   // documents a bucket takes before ties
	h     *held // what the buckets hold
	fresh bool  // each bucket counts from zero: those made are gone
	emit  func(bson.Raw) error

	made  int         // buckets begun
	cur   *autoBucket // the bucket being filled
	taken int         // documents in cur
	bound bsoncore.Value
}

// autoBucket is one bucket being filled.
type autoBucket struct {
	min, max bsoncore.Value
	accs     []accum.Accumulator
}

// bucketer returns a bucketer of n documents that passes the buckets to
// emit, counting what they hold in h.
func (s *bucketAutoStage) bucketer(r *run, n int, h *held, emit func(bson.Raw) error) *bucketer {
	return &bucketer{
		s:    s,
		r:    r,
		size: max(int(math.Round(float64(n)/float64(s.buckets))), 1),
		h:    h,
		emit: emit,
	}
}

// add adds the next document, whose groupBy value is key. key must stay
// unchanged until the bucketer is done with it.
func (b *bucketer) add(key bsoncore.Value, doc bson.Raw) error {
	if b.cur != nil && !b.belongs(key) {
		// The bucket ends below key: boundaries are inclusive below and
		// exclusive above, but for the last bucket's.
		next := key
		if b.s.round != nil {
			b.cur.max = b.bound
			if values.ToFloat(b.cur.max) == 0 {
				b.cur.max = b.s.round.down(key)
			}
			next = b.cur.max
		} else {
			b.cur.max = key
		}
		if err := b.close(); err != nil {
			return err
		}
		if err := b.begin(next); err != nil {
			return err
		}
	} else if b.cur == nil {
		if err := b.begin(key); err != nil {
			return err
		}
	}
	b.cur.max = key
	b.taken++
	for _, a := range b.cur.accs {
		grew, err := a.Add(b.r.ctx, doc)
		if err == nil {
			err = b.h.add(grew)
		}
		if err != nil {
			return err
		}
	}
	if b.taken == b.size && b.s.round != nil {
		b.bound = b.s.round.up(key)
	}
	return nil
}

// belongs reports whether the document of key goes to the current
// bucket.
func (b *bucketer) belongs(key bsoncore.Value) bool {
	switch {
	case b.made == b.s.buckets || b.taken < b.size:
		return true
	case b.s.round != nil:
		return keycodec.Compare(b.bound, key) > 0
	}
	// Values equal under the collation go to one bucket.
	return b.r.opts.Collator.Compare(b.cur.max, key) == 0
}

// begin begins a bucket from min.
func (b *bucketer) begin(min bsoncore.Value) error {
	b.made++
	b.cur, b.taken = &autoBucket{min: min, accs: make([]accum.Accumulator, len(b.s.accs))}, 0
	if b.made == 1 && b.s.round != nil {
		b.cur.min = b.s.round.down(min)
	}
	if b.fresh {
		b.h.n = 0
	}
	return startAccs(b.r.ctx, b.cur.accs, b.s.accs, values.Null)
}

// close passes on the current bucket.
func (b *bucketer) close() error {
	id := bsoncore.NewDocumentBuilder().AppendValue("min", b.cur.min).AppendValue("max", b.cur.max).Build()
	d := bsoncore.NewDocumentBuilder().AppendDocument("_id", id)
	for k, a := range b.s.accs {
		v := b.cur.accs[k].Result()
		if v.Type == 0 {
			v = values.Null
		}
		d.AppendValue(a.field, v)
	}
	b.cur = nil
	return b.emit(bson.Raw(d.Build()))
}

// end passes on the last bucket, whose upper bound is its largest value.
func (b *bucketer) end() error {
	if b.cur == nil {
		return nil
	}
	if b.s.round != nil {
		b.cur.max = b.s.round.up(b.cur.max)
	}
	return b.close()
}

// checkGranularityKey refuses a value a granularity cannot round.
func checkGranularityKey(v bsoncore.Value) error {
	if !values.IsNumeric(v) {
		return mongoerr.New(40258, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: %s", values.TypeName(v))
	}
	f := values.ToFloat(v)
	if math.IsNaN(f) {
		return mongoerr.New(40259, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN")
	}
	if f < 0 {
		return mongoerr.New(40260, "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative number")
	}
	return nil
}

// rounder rounds numbers up and down to a series of preferred numbers, or
// to powers of two when series is nil.
type rounder struct {
	series []float64
}

// preferredSeries are the granularities of $bucketAuto: Renard series,
// E series and 1-2-5, as multiples of the first decade.
var preferredSeries = map[string][]float64{
	"R5":    {10, 16, 25, 40, 63},
	"R10":   {100, 125, 160, 200, 250, 315, 400, 500, 630, 800},
	"R20":   {100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900},
	"R40":   {100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300, 315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950},
	"R80":   {103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307, 325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975},
	"1-2-5": {10, 20, 50},
	"E6":    {10, 15, 22, 33, 47, 68},
	"E12":   {10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82},
	"E24":   {10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91},
	"E48": {100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249, 261, 274, 287, 301,
		316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649, 681, 715, 750, 787, 825, 866, 909, 953},
	"E96": {100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158, 162, 165, 169, 174,
		178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255, 261, 267, 274, 280, 287, 294, 301, 309,
		316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549,
		562, 576, 590, 604, 619, 634, 649, 665, 681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976},
	"E192": {100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124, 126, 127, 129, 130, 132,
		133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156, 158, 160, 162, 164, 165, 167, 169, 172, 174, 176,
		178, 180, 182, 184, 187, 189, 191, 193, 196, 198, 200, 203, 205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234,
		237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267, 271, 274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309, 312,
		316, 320, 324, 328, 332, 336, 340, 344, 348, 352, 357, 361, 365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417,
		422, 427, 432, 437, 442, 448, 453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556,
		562, 569, 576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673, 681, 690, 698, 706, 715, 723, 732, 741,
		750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988},
}

func rounderOf(name string) (*rounder, error) {
	if name == "POWERSOF2" {
		return &rounder{}, nil
	}
	s, ok := preferredSeries[name]
	if !ok {
		return nil, specError(40257, "Unknown rounding granularity '%s'", name)
	}
	return &rounder{series: s}, nil
}

// up rounds v up to the next number of the series strictly above it;
// zero stays zero.
func (r *rounder) up(v bsoncore.Value) bsoncore.Value {
	f := values.ToFloat(v)
	if f == 0 {
		return v
	}
	if r.series == nil {
		return powerOfTwo(v, true)
	}
	s := r.series
	m := 1.0
	for f >= s[len(s)-1]*m {
		m *= 10
	}
	for f < s[0]*m {
		prevMin := s[0] * m
		m /= 10
		if f >= s[len(s)-1]*m {
			return values.Double(prevMin)
		}
	}
	i, _ := slices.BinarySearchFunc(s, f, func(x, f float64) int {
		if f < x*m {
			return 1
		}
		return -1
	})
	return values.Double(s[i] * m)
}

// down rounds v down to the number of the series strictly below it;
// zero stays zero.
func (r *rounder) down(v bsoncore.Value) bsoncore.Value {
	f := values.ToFloat(v)
	if f == 0 {
		return v
	}
	if r.series == nil {
		return powerOfTwo(v, false)
	}
	s := r.series
	m := 1.0
	for f <= s[0]*m {
		m /= 10
	}
	for f > s[len(s)-1]*m {
		prevMax := s[len(s)-1] * m
		m *= 10
		if f <= s[0]*m {
			return values.Double(prevMax)
		}
	}
	i, _ := slices.BinarySearchFunc(s, f, func(x, f float64) int {
		if x*m < f {
			return -1
		}
		return 1
	})
	return values.Double(s[i-1] * m)
}

// powerOfTwo is the power of two strictly above (up) or below v. As in
// MongoDB, it is 2 raised by $pow to an integer exponent: an int, or a
// long past an int's range, for exponents from 0 to 62, a double below 1
// or past a long, and a decimal for a decimal.
func powerOfTwo(v bsoncore.Value, up bool) bsoncore.Value {
	var exp int
	if v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64 {
		n, _ := bsonvalue.IntegerValue(v)
		high := 63 - bits.LeadingZeros64(uint64(n)) // the highest bit set
		switch {
		case up:
			exp = high + 1
		case n&(n-1) == 0:
			exp = high - 1
		default:
			exp = high
		}
	} else {
		f := values.ToFloat(v)
		if math.IsInf(f, 0) {
			return v
		}
		if up {
			exp = int(math.Floor(math.Log2(f))) + 1
		} else {
			exp = int(math.Ceil(math.Log2(f))) - 1
		}
	}
	switch {
	case v.Type == bsoncore.TypeDecimal128:
		return decimalPowerOfTwo(exp)
	case exp < 0 || exp > 62:
		return values.Double(math.Exp2(float64(exp)))
	case exp < 31:
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(1)<<exp)}
	}
	return values.Int64(int64(1) << exp)
}

// decimalPowerOfTwo is 2^exp as a decimal, exact to 34 digits: 2^-k is
// 5^k / 10^k.
func decimalPowerOfTwo(exp int) bsoncore.Value {
	var s string
	if exp >= 0 {
		s = new(big.Int).Lsh(big.NewInt(1), uint(exp)).String()
	} else {
		s = new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-exp)), nil).String() + "E" + strconv.Itoa(exp)
	}
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		return values.Double(math.Exp2(float64(exp)))
	}
	hi, lo := d.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}
