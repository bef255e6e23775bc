package keycodec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// The key of a number x is built around T, x truncated toward zero to a
// double (clamped to ±MaxFloat64; NaN and the infinities are their own T). It
// is T's 8 order-preserving bytes, then a marker saying whether x is below, at
// or above T, then for x != T the remainder |x - T|. Every x with the same T
// lies strictly between T's neighbouring doubles, so T's bytes decide the
// order first, and the remainder only breaks ties among numbers no double
// holds: int64s beyond 2^53 and most decimals. Since T and the remainder are
// functions of the exact value, equal numbers of any types get equal keys.
//
// The remainder is written in decimal, which represents every possible
// remainder exactly: two bytes for the power of ten of its leading digit, its
// significant digits two to a byte, and endOfDigits. Below T, a larger
// remainder means a smaller x, so those remainder bytes are inverted.
const (
	numberBelow = 0x01
	numberExact = 0x02
	numberAbove = 0x03

	endOfDigits = 0x00 // digit pair bytes are 1 to 100
)

func appendNumber(dst []byte, n number) []byte {
	switch n.form {
	case formInt:
		if n.i < 0 {
			return appendInteger(dst, true, -uint64(n.i))
		}
		return appendInteger(dst, false, uint64(n.i))
	case formDecimal:
		return appendDecimal(dst, n.dec)
	}
	return appendDouble(dst, n.f)
}

func appendDouble(dst []byte, f float64) []byte {
	return append(appendOrderedDouble(dst, f), numberExact)
}

// appendOrderedDouble appends 8 bytes that sort as f does, with NaN first and
// -0 equal to 0.
func appendOrderedDouble(dst []byte, f float64) []byte {
	var u uint64
	switch {
	case math.IsNaN(f):
		u = 0 // below -Inf, which maps to 0x000fffffffffffff
	case f == 0:
		u = 1 << 63
	case f > 0:
		u = math.Float64bits(f) | 1<<63
	default:
		u = ^math.Float64bits(f)
	}
	return binary.BigEndian.AppendUint64(dst, u)
}

// appendInteger appends the key of the integer ±mag.
func appendInteger(dst []byte, neg bool, mag uint64) []byte {
	dropped := bits.Len64(mag) - 53 // low bits a double has no room for
	if dropped <= 0 {
		f := float64(mag)
		if neg {
			f = -f
		}
		return appendDouble(dst, f)
	}
	truncated := mag >> dropped << dropped
	t := float64(truncated)
	if neg {
		t = -t
	}
	dst = appendOrderedDouble(dst, t)
	rem := mag - truncated
	if rem == 0 {
		return append(dst, numberExact)
	}
	var digits [20]byte
	return appendRemainder(dst, neg, strconv.AppendUint(digits[:0], rem, 10), 0)
}

func appendDecimal(dst []byte, d decimal) []byte {
	switch {
	case d.kind == kindNaN:
		return appendDouble(dst, math.NaN())
	case d.kind == kindNegInf:
		return appendDouble(dst, math.Inf(-1))
	case d.kind == kindPosInf:
		return appendDouble(dst, math.Inf(1))
	}

	// The slow path, exact in big arithmetic. It works on |x|.
	x := d.rat()
	t, exact := x.Abs(x).Float64() // nearest, not yet truncated
	if exact {
		if d.neg {
			t = -t
		}
		return appendDouble(dst, t)
	}
	t = min(t, math.MaxFloat64)
	coef := d.coefficient()
	rem, scale := decimalRemainder(coef, d.exp, t)
	if rem.Sign() < 0 { // rounded away from zero
		t = math.Nextafter(t, 0)
		rem, scale = decimalRemainder(coef, d.exp, t)
	}
	if d.neg {
		t = -t
	}
	dst = appendOrderedDouble(dst, t)
	return appendRemainder(dst, d.neg, rem.Append(nil, 10), scale)
}

// decimalRemainder returns coef×10^exp - t as rem×10^scale, exactly. Both
// terms are integer multiples of 10^scale once scale is low enough: a double
// m×2^e with e < 0 equals m×5^-e×10^e.
func decimalRemainder(coef *big.Int, exp int, t float64) (rem *big.Int, scale int) {
	frac, e := math.Frexp(t)
	mant := new(big.Int).SetUint64(uint64(frac * (1 << 53)))
	e -= 53
	scale = min(exp, 0, e)
	if e >= 0 {
		mant.Lsh(mant, uint(e))
		mant.Mul(mant, pow10(-scale))
	} else {
		mant.Mul(mant, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-e)), nil))
		mant.Mul(mant, pow10(e-scale))
	}
	rem = new(big.Int).Mul(coef, pow10(exp-scale))
	return rem.Sub(rem, mant), scale
}

// appendRemainder appends the marker and remainder for a number that differs
// from its truncated double by digits×10^scale, where digits are decimal
// ASCII without leading zeros.
func appendRemainder(dst []byte, below bool, digits []byte, scale int) []byte {
	if below {
		dst = append(dst, numberBelow)
	} else {
		dst = append(dst, numberAbove)
	}
	start := len(dst)
	leading := scale + len(digits) - 1
	dst = binary.BigEndian.AppendUint16(dst, uint16(leading)^1<<15)
	digits = bytes.TrimRight(digits, "0")
	for i := 0; i < len(digits); i += 2 {
		pair := (digits[i] - '0') * 10
		if i+1 < len(digits) {
			pair += digits[i+1] - '0'
		}
		dst = append(dst, pair+1)
	}
	dst = append(dst, endOfDigits)
	if below {
		invert(dst[start:])
	}
	return dst
}
