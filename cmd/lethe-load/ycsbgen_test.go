package main

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestZeta(t *testing.T) {
	// Beyond zetaExactTerms the tail is estimated: compare with the sum
	// made term by term.
	const n = 3 * zetaExactTerms
	var exact float64
	for i := 1; i <= n; i++ {
		exact += math.Pow(float64(i), -zipfianConstant)
	}
	if got := zeta(n, zipfianConstant); math.Abs(got-exact) > 1e-9 {
		t.Errorf("zeta(%d) = %.12f, want %.12f", n, got, exact)
	}
	// YCSB's ScrambledZipfianGenerator.ZETAN, computed by its authors for
	// ten billion items at constant 0.99.
	const ycsbZetan = 26.46902820178302
	if got := zeta(scrambledItems, zipfianConstant); math.Abs(got-ycsbZetan) > 1e-6 {
		t.Errorf("zeta(%d) = %.12f, want YCSB's %.12f", uint64(scrambledItems), got, ycsbZetan)
	}
}

// The two most popular items are drawn exactly, with probabilities
// 1/zeta(n) and 2^-theta/zeta(n); every draw is in range; popularity falls
// with the item's rank.
func TestZipfianShape(t *testing.T) {
	const n, draws = 1000, 400_000
	z := newZipfian(n, zipfianConstant)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, n)
	for range draws {
		v := z.next(rng)
		if v >= n {
			t.Fatalf("draw %d out of [0, %d)", v, n)
		}
		counts[v]++
	}
	for item, want := range []float64{1 / z.zetan, math.Pow(2, -zipfianConstant) / z.zetan} {
		got := float64(counts[item]) / draws
		// Binomial standard deviation is below 0.0005 here: 3% of the
		// expected share is several of them.
		if math.Abs(got-want) > 0.03*want {
			t.Errorf("item %d drawn %.4f of the time, want %.4f", item, got, want)
		}
	}
	sum := func(from, to int) (s int) {
		for _, c := range counts[from:to] {
			s += c
		}
		return s
	}
	// Under Zipf's law a decade of ranks holds about as many draws as the
	// next: ranks 10-99 against 100-999 differ by the constant's 0.01
	// only, while uniform draws would put ten times as many in the second.
	if a, b := sum(10, 100), sum(100, 1000); b > 2*a || a > 2*b {
		t.Errorf("ranks 10-99 drawn %d times, 100-999 %d times: not Zipfian", a, b)
	}
	if counts[0] <= counts[1] || counts[1] <= counts[10] || counts[10] <= counts[500] {
		t.Errorf("popularity does not fall with rank: %d, %d, %d, %d", counts[0], counts[1], counts[10], counts[500])
	}
}

func TestUniformKeysCoverage(t *testing.T) {
	const n, draws = 100, 100_000
	u := uniformKeys{n: n}
	rng := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, n)
	for range draws {
		v := u.next(rng)
		if v >= n {
			t.Fatalf("draw %d out of [0, %d)", v, n)
		}
		counts[v]++
	}
	for k, c := range counts {
		if c < draws/n*8/10 || c > draws/n*12/10 {
			t.Errorf("key %d drawn %d times, want about %d", k, c, draws/n)
		}
	}
}

// Scrambled draws stay in range, the most popular key is drawn about as
// often as the Zipfian's first item, and the popular keys are scattered
// rather than the first ones.
func TestScrambledZipfian(t *testing.T) {
	const n, draws = 1000, 200_000
	s := newScrambledZipfian(n)
	rng := rand.New(rand.NewPCG(5, 6))
	counts := make([]int, n)
	for range draws {
		v := s.next(rng)
		if v >= n {
			t.Fatalf("draw %d out of [0, %d)", v, n)
		}
		counts[v]++
	}
	top := 0
	for k, c := range counts {
		if c > counts[top] {
			top = k
		}
	}
	// Key fnv(0)%n holds item 0 and, by collision, about one
	// thousandth of the rest.
	want := 1/s.z.zetan + (1-1/s.z.zetan)/n
	if got := float64(counts[top]) / draws; math.Abs(got-want) > 0.1*want {
		t.Errorf("most popular key drawn %.4f of the time, want about %.4f", got, want)
	}
	if wantTop := int(fnvHash64(0) % n); top != wantTop {
		t.Errorf("most popular key is %d, want fnv(0) mod n = %d", top, wantTop)
	}
	// Unscrambled, the first ten items would take zeta(10)/zeta(1e10),
	// about 11% of the draws; scattered, they take about their 1%.
	first := 0
	for _, c := range counts[:10] {
		first += c
	}
	if first > draws/20 {
		t.Errorf("keys 0-9 drawn %d times of %d: the popular keys are not scattered", first, draws)
	}
}

func TestFNVHash64(t *testing.T) {
	// FNV-1a of eight zero bytes, from the algorithm's definition: the
	// offset basis multiplied by the prime eight times, then made
	// non-negative.
	h := uint64(0xcbf29ce484222325)
	for range 8 {
		h *= 0x100000001b3
	}
	if int64(h) < 0 {
		h = uint64(-int64(h))
	}
	if got := fnvHash64(0); got != h {
		t.Errorf("fnvHash64(0) = %d, want %d", got, h)
	}
	for _, v := range []uint64{1, 2, 12345, 1 << 40} {
		if got := fnvHash64(v); int64(got) < 0 {
			t.Errorf("fnvHash64(%d) = %d is negative as a Java long", v, int64(got))
		}
	}
}

func TestYCSBKey(t *testing.T) {
	seen := make(map[string]bool)
	for n := range uint64(20_000) {
		k := ycsbKey(n)
		if len(k) != len("user")+keyDigits || !strings.HasPrefix(k, "user") || strings.Trim(k[4:], "0123456789") != "" {
			t.Fatalf("ycsbKey(%d) = %q, want user and %d digits", n, k, keyDigits)
		}
		if seen[k] {
			t.Fatalf("ycsbKey(%d) = %q repeats an earlier key", n, k)
		}
		seen[k] = true
	}
}
