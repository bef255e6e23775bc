package values

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Sum adds numbers with MongoDB's result type: int32 while it fits,
// then int64, double once a double is added or an int64 overflows, and
// decimal once a decimal is added.
type Sum struct {
	i       int64
	f       float64
	isFloat bool
	isLong  bool
	dec     *decimalSum // once a decimal was added
}

func (n *Sum) Add(v bsoncore.Value) {
	if v.Type == bsoncore.TypeDecimal128 && n.dec == nil {
		n.dec = &decimalSum{}
	}
	if n.dec != nil {
		n.dec.add(v)
	}
	switch v.Type {
	case bsoncore.TypeInt32:
		n.addInt(int64(v.Int32()))
	case bsoncore.TypeInt64:
		n.addInt(v.Int64())
		n.isLong = true
	case bsoncore.TypeDouble:
		n.f += v.Double()
		n.isFloat = true
	case bsoncore.TypeDecimal128:
		n.f += ToFloat(v)
	}
}

// addInt adds to the integer sum, or to the double one once the integers
// no longer fit in 64 bits.
func (n *Sum) addInt(i int64) {
	if s := n.i + i; (s > n.i) == (i > 0) || i == 0 {
		n.i = s
		return
	}
	n.f += float64(n.i) + float64(i)
	n.i = 0
	n.isFloat = true
}

func (n *Sum) float() float64 { return n.f + float64(n.i) }

func (n *Sum) Value() bsoncore.Value {
	switch {
	case n.dec != nil:
		return n.dec.value(1)
	case n.isFloat:
		return Double(n.float())
	case n.isLong || n.i != int64(int32(n.i)):
		return Int64(n.i)
	}
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n.i))}
}

// Mean is the sum divided by count: a decimal if a decimal was added, a
// double otherwise.
func (n *Sum) Mean(count int64) bsoncore.Value {
	if n.dec != nil {
		return n.dec.value(count)
	}
	return Double(n.float() / float64(count))
}

// decimalSum adds numbers exactly, as decimal arithmetic would: its scale
// is the largest of the numbers added, as the exponent of a decimal sum
// is the smallest of its terms'.
type decimalSum struct {
	r     big.Rat
	scale int
	nan   bool
}

func (d *decimalSum) add(v bsoncore.Value) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := v.AsInt64OK()
		d.r.Add(&d.r, new(big.Rat).SetInt64(n))
	case bsoncore.TypeDouble:
		// A double becomes the decimal of its 15 significant digits, as
		// MongoDB converts it.
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.nan = true
			return
		}
		dec, err := bson.ParseDecimal128(strconv.FormatFloat(f, 'e', 14, 64))
		if err == nil {
			d.addDecimal(dec)
		}
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		d.addDecimal(bson.NewDecimal128(h, l))
	}
}

func (d *decimalSum) addDecimal(dec bson.Decimal128) {
	c, exp, err := dec.BigInt()
	if err != nil {
		d.nan = true
		return
	}
	d.scale = max(d.scale, -exp)
	r := new(big.Rat).SetInt(c)
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
	if exp < 0 {
		r.Quo(r, new(big.Rat).SetInt(p))
	} else {
		r.Mul(r, new(big.Rat).SetInt(p))
	}
	d.r.Add(&d.r, r)
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// value is the sum divided by n, as a decimal of the sum's scale or, when
// that is not exact, of the fewest more digits that are, up to decimal's
// 34 significant digits.
func (d *decimalSum) value(n int64) bsoncore.Value {
	if d.nan {
		dec, _ := bson.ParseDecimal128("NaN")
		h, l := dec.GetBytes()
		return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
	}
	q := new(big.Rat).Quo(&d.r, new(big.Rat).SetInt64(n))
	return decimalOfRat(q, d.scale)
}

// decimalOfRat is q as a decimal with at least scale digits after the
// point, rounded half to even to 34 significant digits.
func decimalOfRat(q *big.Rat, scale int) bsoncore.Value {
	ten := big.NewInt(10)
	num := new(big.Int)
	for s := scale; ; s++ {
		p := new(big.Int).Exp(ten, big.NewInt(int64(s)), nil)
		scaled := new(big.Rat).Mul(q, new(big.Rat).SetInt(p))
		num.Quo(scaled.Num(), scaled.Denom())
		exact := scaled.IsInt()
		if len(new(big.Int).Abs(num).String()) > 34 {
			// Too many digits: round to 34 significant ones.
			for len(new(big.Int).Abs(num).String()) > 34 {
				s--
				p = new(big.Int).Exp(ten, big.NewInt(int64(s)), nil)
				scaled = new(big.Rat).Mul(q, new(big.Rat).SetInt(p))
				num = roundHalfEven(scaled)
			}
			return decimalValue(num, -s)
		}
		if exact || s > scale+40 {
			if !exact {
				num = roundHalfEven(scaled)
			}
			return decimalValue(num, -s)
		}
	}
}

func roundHalfEven(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
	switch c := twice.Cmp(r.Denom()); {
	case c > 0 || c == 0 && q.Bit(0) == 1:
		if r.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

func decimalValue(c *big.Int, exp int) bsoncore.Value {
	dec, ok := bson.ParseDecimal128FromBigInt(c, exp)
	if !ok {
		dec, _ = bson.ParseDecimal128("NaN")
	}
	h, l := dec.GetBytes()
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, h, l)}
}
