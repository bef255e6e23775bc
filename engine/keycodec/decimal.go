package keycodec

import (
	"cmp"
	"math"
	"math/big"
)

// decimal is a decimal128 value split into its IEEE 754-2008 fields. Finite
// values are ±coefficient × 10^exp.
type decimal struct {
	kind           numberKind
	neg            bool
	coefHi, coefLo uint64 // the coefficient, below 10^34
	exp            int
}

const (
	decimalExpBias = 6176
	// The largest coefficient, 10^34 - 1, split into 64-bit halves.
	decimalMaxCoefHi = 0x1ed09bead87c0
	decimalMaxCoefLo = 0x378d8e63ffffffff
)

// decodeDecimal splits the binary integer decimal encoding used by BSON.
func decodeDecimal(hi, lo uint64) decimal {
	switch hi >> 58 & 0x1f {
	case 0x1f:
		return decimal{kind: kindNaN}
	case 0x1e:
		if hi>>63 == 1 {
			return decimal{kind: kindNegInf}
		}
		return decimal{kind: kindPosInf}
	}
	d := decimal{kind: kindFinite, neg: hi>>63 == 1}
	if hi>>61&3 == 3 {
		// The coefficient would be at least 2^113, which IEEE 754 declares
		// non-canonical: its value is zero.
		d.exp = int(hi>>47&0x3fff) - decimalExpBias
		return d
	}
	d.exp = int(hi>>49&0x3fff) - decimalExpBias
	d.coefHi, d.coefLo = hi&(1<<49-1), lo
	if d.coefHi > decimalMaxCoefHi || d.coefHi == decimalMaxCoefHi && d.coefLo > decimalMaxCoefLo {
		d.coefHi, d.coefLo = 0, 0 // non-canonical as well
	}
	return d
}

// int64 returns the value of d if it is an integer that fits an int64.
func (d decimal) int64() (int64, bool) {
	if d.kind != kindFinite || d.coefHi != 0 {
		return 0, false
	}
	mag := d.coefLo
	if mag == 0 {
		return 0, true
	}
	for exp := d.exp; exp < 0; exp++ {
		if mag%10 != 0 {
			return 0, false
		}
		mag /= 10
	}
	for exp := d.exp; exp > 0; exp-- {
		if mag > math.MaxInt64/10 {
			return 0, false
		}
		mag *= 10
	}
	switch {
	case mag <= math.MaxInt64 && d.neg:
		return -int64(mag), true
	case mag <= math.MaxInt64:
		return int64(mag), true
	case mag == 1<<63 && d.neg:
		return math.MinInt64, true
	}
	return 0, false
}

// compareCoefficients compares non-zero finite decimals of equal exponents.
func compareCoefficients(a, b decimal) int {
	if a.neg != b.neg {
		return cmp.Compare(boolRank(b.neg), boolRank(a.neg))
	}
	c := cmp.Or(cmp.Compare(a.coefHi, b.coefHi), cmp.Compare(a.coefLo, b.coefLo))
	if a.neg {
		return -c
	}
	return c
}

// coefficient returns the coefficient as a big.Int.
func (d decimal) coefficient() *big.Int {
	c := new(big.Int).SetUint64(d.coefHi)
	c.Lsh(c, 64)
	return c.Or(c, new(big.Int).SetUint64(d.coefLo))
}

// rat returns the value of a finite decimal.
func (d decimal) rat() *big.Rat {
	r := new(big.Rat).SetInt(d.coefficient())
	if d.exp != 0 {
		scale := new(big.Rat).SetInt(pow10(abs(d.exp)))
		if d.exp > 0 {
			r.Mul(r, scale)
		} else {
			r.Quo(r, scale)
		}
	}
	if d.neg {
		r.Neg(r)
	}
	return r
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
