package keycodec

import (
	"cmp"
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// numberForm says which field of a number holds its value.
type numberForm uint8

const (
	formInt     numberForm = iota // int32 or int64, in i
	formDouble                    // in f
	formDecimal                   // in dec; never zero or another int64
)

// number is a numeric BSON value of any type.
type number struct {
	form numberForm
	i    int64
	f    float64
	dec  decimal
}

// readNumber reads a value of the number class. Unreadable data reads as zero.
func readNumber(v bsoncore.Value) number {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		return number{form: formInt, i: int64(i)}
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return number{form: formInt, i: i}
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		d := decodeDecimal(hi, lo)
		// Most decimals in practice are integers; those take the fast paths.
		if i, ok := d.int64(); ok {
			return number{form: formInt, i: i}
		}
		return number{form: formDecimal, dec: d}
	}
	f, _ := v.DoubleOK()
	return number{form: formDouble, f: f}
}

// numberKind ranks the values outside the finite numbers.
type numberKind uint8

const (
	kindNaN numberKind = iota // every NaN, equal to each other and below all else
	kindNegInf
	kindFinite
	kindPosInf
)

func (n number) kind() numberKind {
	switch n.form {
	case formInt:
		return kindFinite
	case formDecimal:
		return n.dec.kind
	}
	switch {
	case math.IsNaN(n.f):
		return kindNaN
	case math.IsInf(n.f, -1):
		return kindNegInf
	case math.IsInf(n.f, 1):
		return kindPosInf
	}
	return kindFinite
}

// compareNumbers compares numbers by their exact mathematical value.
func compareNumbers(a, b number) int {
	switch {
	case a.form == formDecimal || b.form == formDecimal:
		return compareExact(a, b)
	case a.form == formInt && b.form == formInt:
		return cmp.Compare(a.i, b.i)
	case a.form == formInt:
		return -compareDoubleInt(b.f, a.i)
	case b.form == formInt:
		return compareDoubleInt(a.f, b.i)
	}
	// cmp.Compare already puts NaN below everything and -0 equal to 0.
	return cmp.Compare(a.f, b.f)
}

// compareDoubleInt compares f with i exactly, where converting either one to
// the other's type could round.
func compareDoubleInt(f float64, i int64) int {
	switch {
	case math.IsNaN(f), f < -0x1p63:
		return -1
	case f >= 0x1p63:
		return 1
	}
	// Now f's integer part fits an int64 exactly.
	whole := math.Trunc(f)
	if c := cmp.Compare(int64(whole), i); c != 0 {
		return c
	}
	return cmp.Compare(f, whole)
}

// compareExact compares numbers as rationals. It is the slow path, used when
// a decimal is involved.
func compareExact(a, b number) int {
	ka, kb := a.kind(), b.kind()
	if ka != kb || ka != kindFinite {
		return cmp.Compare(ka, kb)
	}
	if a.form == formDecimal && b.form == formDecimal && a.dec.exp == b.dec.exp {
		return compareCoefficients(a.dec, b.dec)
	}
	return a.rat().Cmp(b.rat())
}

// rat returns the value of a finite number.
func (n number) rat() *big.Rat {
	switch n.form {
	case formInt:
		return new(big.Rat).SetInt64(n.i)
	case formDouble:
		return new(big.Rat).SetFloat64(n.f)
	}
	return n.dec.rat()
}
