package main

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// The key choosers of the YCSB mixes. YCSB (Cooper et al., "Benchmarking
// Cloud Serving Systems with YCSB", SoCC 2010) draws the records its
// operations touch from a Zipfian distribution of constant 0.99, with the
// popular records scattered over the key space by a hash, or uniformly;
// these reproduce its choices so that Lethe's figures read like published
// YCSB results.

// zipfianConstant is YCSB's default Zipfian skew (its
// ZipfianGenerator.ZIPFIAN_CONSTANT): item i (from 0) is drawn with a
// probability proportional to 1/(i+1)^0.99.
const zipfianConstant = 0.99

// scrambledItems is the size of the Zipfian YCSB's scrambled generator
// draws from before hashing the draw onto the records (its
// ScrambledZipfianGenerator.ITEM_COUNT): so large that the hash's
// collisions modulo the record count spread the popular items evenly.
const scrambledItems = 10_000_000_000

// zipfian draws from {0, ..., n-1} with the method of Gray et al., "Quickly
// Generating Billion-Record Synthetic Databases" (SIGMOD 1994), section
// 5.1: the two most popular items exactly, the others by inverting a
// continuous approximation of the distribution, in constant time per draw
// after computing zeta(n) once. It is read-only after construction, so
// clients share it, each drawing with its own random source.
type zipfian struct {
	n     uint64
	theta float64
	alpha float64 // 1/(1-theta)
	zetan float64 // zeta(n, theta)
	eta   float64
	half  float64 // 1 + 0.5^theta: the bound of u*zetan for item 1
}

func newZipfian(n uint64, theta float64) *zipfian {
	zetan := zeta(n, theta)
	return &zipfian{
		n:     n,
		theta: theta,
		alpha: 1 / (1 - theta),
		zetan: zetan,
		eta:   (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta(2, theta)/zetan),
		half:  1 + math.Pow(0.5, theta),
	}
}

func (z *zipfian) next(rng *rand.Rand) uint64 {
	uz := rng.Float64() * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.half:
		return 1
	}
	// uz/zetan is the u of the paper; recomputing it from uz would only
	// round differently.
	u := uz / z.zetan
	v := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	// u close to 1 maps to n itself.
	return min(v, z.n-1)
}

// zetaExactTerms is how many terms of zeta are summed one by one; the rest
// of a longer sum is estimated.
const zetaExactTerms = 100_000

// zeta is the generalized harmonic number, the sum over i from 1 to n of
// 1/i^theta: the Zipfian's normalizing constant. Summing ten billion terms
// (scrambledItems) would take a minute, so beyond zetaExactTerms the tail
// is the Euler-Maclaurin formula's integral and first two corrections,
// exact to about 1e-15 there since the terms' derivatives are tiny. (YCSB
// itself uses a precomputed constant for ten billion items, which
// TestZeta checks this against.)
func zeta(n uint64, theta float64) float64 {
	var sum float64
	m := min(n, zetaExactTerms)
	for i := uint64(1); i <= m; i++ {
		sum += math.Pow(float64(i), -theta)
	}
	if n == m {
		return sum
	}
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	df := func(x float64) float64 { return -theta * math.Pow(x, -theta-1) }
	a, b := float64(m), float64(n)
	integral := (math.Pow(b, 1-theta) - math.Pow(a, 1-theta)) / (1 - theta)
	// The sum over (m, n] is the integral plus (f(n)-f(m))/2 plus
	// (f'(n)-f'(m))/12.
	return sum + integral + (f(b)-f(a))/2 + (df(b)-df(a))/12
}

// A keyChooser picks the record an operation touches, a number in
// [0, records) of the loaded records.
type keyChooser interface {
	next(rng *rand.Rand) uint64
}

// uniformKeys picks every record equally often (--ycsb-dist=uniform).
type uniformKeys struct{ n uint64 }

func (u uniformKeys) next(rng *rand.Rand) uint64 { return rng.Uint64N(u.n) }

// scrambledZipfian picks records with Zipfian popularity scattered over
// the key space, as YCSB's ScrambledZipfianGenerator: a draw from a
// Zipfian over scrambledItems items, hashed (FNV-1a), modulo the record
// count. Without the hash the popular records would be the first ones
// loaded, neighbours in the key space, and so in the same pages of the
// store; with it, a few records are still far more popular than the rest,
// but not adjacent.
type scrambledZipfian struct {
	z *zipfian
	n uint64
}

func newScrambledZipfian(n uint64) scrambledZipfian {
	return scrambledZipfian{z: newZipfian(scrambledItems, zipfianConstant), n: n}
}

func (s scrambledZipfian) next(rng *rand.Rand) uint64 {
	return fnvHash64(s.z.next(rng)) % s.n
}

// fnvHash64 is YCSB's Utils.fnvhash64: FNV-1a (Fowler, Noll and Vo) over
// the eight bytes of v, low byte first, made non-negative as a Java long
// by its absolute value. YCSB uses it both to scramble the Zipfian and to
// turn record numbers into keys.
func fnvHash64(v uint64) uint64 {
	const (
		offsetBasis = 0xcbf29ce484222325
		prime       = 0x100000001b3
	)
	h := uint64(offsetBasis)
	for range 8 {
		h ^= v & 0xff
		h *= prime
		v >>= 8
	}
	if int64(h) < 0 && int64(h) != math.MinInt64 {
		h = uint64(-int64(h))
	}
	return h
}

// keyDigits is the width the hashed record number is zero-padded to: the
// most digits a non-negative int64 has. Padded, the keys sort as their
// numbers do, and all keys have the same length.
const keyDigits = 19

// ycsbKey is record number n's key, as YCSB's CoreWorkload.buildKeyName
// makes it with its default hashed insert order: "user" then the record
// number's FNV hash, so that records loaded one after the other land
// anywhere in the key space and a scan from a key reads records loaded at
// any time.
func ycsbKey(n uint64) string {
	digits := strconv.FormatUint(fnvHash64(n), 10)
	buf := make([]byte, 0, len("user")+keyDigits)
	buf = append(buf, "user"...)
	for range keyDigits - len(digits) {
		buf = append(buf, '0')
	}
	return string(append(buf, digits...))
}
