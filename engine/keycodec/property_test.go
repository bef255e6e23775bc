package keycodec

import (
	"bytes"
	"cmp"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// valueGen makes random values that collide often: small alphabets, and
// numbers clustered where types and rounding meet.
type valueGen struct {
	rng *rand.Rand
}

func newValueGen(seed uint64) valueGen {
	return valueGen{rand.New(rand.NewPCG(seed, 0))}
}

func (g valueGen) value(depth int) bsoncore.Value {
	switch g.rng.IntN(16) {
	case 0, 1, 2, 3, 4:
		return g.number()
	case 5, 6:
		if g.rng.IntN(4) == 0 {
			return bsoncore.Value{Type: bsoncore.TypeSymbol, Data: bsoncore.AppendSymbol(nil, g.text())}
		}
		return str(g.text())
	case 7:
		if depth > 0 {
			return g.document(depth - 1)
		}
	case 8:
		if depth > 0 {
			values := make([]bsoncore.Value, g.rng.IntN(4))
			for i := range values {
				values[i] = g.value(depth - 1)
			}
			return arr(values...)
		}
	case 9:
		return bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, byte(g.rng.IntN(3)), []byte(g.text()))}
	case 10:
		var oid [12]byte
		oid[11] = byte(g.rng.IntN(3))
		oid[0] = byte(g.rng.IntN(2) * 0xff)
		return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}
	case 11:
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, g.rng.IntN(2) == 1)}
	case 12:
		ms := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}[g.rng.IntN(5)]
		return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, ms)}
	case 13:
		ts := []uint32{0, 1, 1 << 31, math.MaxUint32}
		return bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, ts[g.rng.IntN(4)], ts[g.rng.IntN(4)])}
	case 14:
		return g.code(depth)
	}
	return g.rare()
}

func (g valueGen) document(depth int) bsoncore.Value {
	var namesAndValues []any
	for range g.rng.IntN(4) {
		name := strings.ReplaceAll(g.text(), "\x00", "")
		namesAndValues = append(namesAndValues, name, g.value(depth))
	}
	return doc(namesAndValues...)
}

func (g valueGen) code(depth int) bsoncore.Value {
	if g.rng.IntN(2) == 0 || depth == 0 {
		return bsoncore.Value{Type: bsoncore.TypeJavaScript, Data: bsoncore.AppendJavaScript(nil, g.text())}
	}
	scope := g.document(depth - 1)
	return bsoncore.Value{Type: bsoncore.TypeCodeWithScope, Data: bsoncore.AppendCodeWithScope(nil, g.text(), scope.Data)}
}

func (g valueGen) rare() bsoncore.Value {
	switch g.rng.IntN(7) {
	case 0:
		return bsoncore.Value{Type: bsoncore.TypeMinKey}
	case 1:
		return bsoncore.Value{Type: bsoncore.TypeMaxKey}
	case 2:
		return bsoncore.Value{Type: bsoncore.TypeUndefined}
	case 3:
		return bsoncore.Value{Type: bsoncore.TypeNull}
	case 4:
		pattern := strings.ReplaceAll(g.text(), "\x00", "")
		options := []string{"", "i", "im"}[g.rng.IntN(3)]
		return bsoncore.Value{Type: bsoncore.TypeRegex, Data: bsoncore.AppendRegex(nil, pattern, options)}
	case 5:
		var oid [12]byte
		oid[11] = byte(g.rng.IntN(2))
		return bsoncore.Value{Type: bsoncore.TypeDBPointer, Data: bsoncore.AppendDBPointer(nil, g.text(), oid)}
	}
	return bsoncore.Value{Type: bsoncore.Type(0x20 + g.rng.IntN(3))} // outside the spec
}

func (g valueGen) text() string {
	const alphabet = "\x00\x01ab\xff"
	b := make([]byte, g.rng.IntN(4))
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// number returns a number of a random type, biased toward values that
// compare equal across types or sit on rounding boundaries.
func (g valueGen) number() bsoncore.Value {
	switch g.rng.IntN(8) {
	case 0: // small integers in every type, decimals with varying scale
		i := int64(g.rng.IntN(7) - 3)
		return g.integer(i)
	case 1: // integers around the limits of doubles and int64
		bases := []int64{1 << 53, -1 << 53, math.MaxInt64 - 1024, math.MinInt64 + 1024, 1 << 62}
		return g.integer(bases[g.rng.IntN(len(bases))] + int64(g.rng.IntN(5)-2))
	case 2: // any double, NaNs and subnormals included
		return dbl(math.Float64frombits(g.rng.Uint64()))
	case 3: // dyadic fractions, as doubles or as the equal decimals
		r := big.NewRat(int64(g.rng.IntN(2001)-1000), 1<<g.rng.IntN(12))
		f, _ := r.Float64()
		if g.rng.IntN(2) == 0 {
			return dbl(f)
		}
		return dec(r.FloatString(12))
	case 4: // decimals near doubles: the shortest decimal that rounds to one
		f := math.Float64frombits(g.rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0.1
		}
		return dec(strconv.FormatFloat(f, 'e', -1, 64))
	case 5: // random decimals, extreme exponents included
		digits := strconv.FormatUint(g.rng.Uint64()%1e17, 10) + strconv.FormatUint(g.rng.Uint64()%1e17, 10)
		digits = digits[:1+g.rng.IntN(len(digits))]
		exp := g.rng.IntN(80) - 40
		if g.rng.IntN(4) == 0 {
			exp = g.rng.IntN(6111+6176-33) - 6176
		}
		sign := []string{"", "-"}[g.rng.IntN(2)]
		return dec(sign + digits + "E" + strconv.Itoa(exp))
	case 6: // arbitrary decimal bits: NaN payloads, non-canonical coefficients
		return decBits(g.rng.Uint64(), g.rng.Uint64())
	}
	specials := []bsoncore.Value{
		dbl(math.Inf(1)), dbl(math.Inf(-1)), dbl(math.NaN()), dec("NaN"), dec("-Infinity"),
		dbl(math.MaxFloat64), dbl(-math.MaxFloat64), dec("1E+400"), dec("-1E-400"),
		dbl(math.SmallestNonzeroFloat64), dbl(math.Copysign(0, -1)), dec("-0"),
	}
	return specials[g.rng.IntN(len(specials))]
}

func (g valueGen) integer(i int64) bsoncore.Value {
	switch g.rng.IntN(4) {
	case 0:
		if i == int64(int32(i)) {
			return i32(int32(i))
		}
	case 1:
		return dbl(float64(i)) // rounds beyond 2^53, on purpose
	case 2:
		zeros := g.rng.IntN(3)
		return dec(strconv.FormatInt(i, 10) + strings.Repeat("0", zeros) + "E-" + strconv.Itoa(zeros))
	}
	return i64(i)
}

func TestKeysOrderLikeCompare(t *testing.T) {
	g := newValueGen(1)
	const n = 3000
	values := make([]bsoncore.Value, n)
	keys := make([][]byte, n)
	descKeys := make([][]byte, n)
	for i := range values {
		values[i] = g.value(3)
		keys[i] = Append(nil, values[i])
		descKeys[i] = AppendDesc(nil, values[i])
		if k, err := Skip(keys[i]); k != len(keys[i]) || err != nil {
			t.Fatalf("Skip(Append(%v)) = %d, %v; want %d", values[i], k, err, len(keys[i]))
		}
		if k, err := Skip(descKeys[i]); k != len(descKeys[i]) || err != nil {
			t.Fatalf("Skip(AppendDesc(%v)) = %d, %v; want %d", values[i], k, err, len(descKeys[i]))
		}
	}
	// Neighbours and random pairs: neighbours in generation order are often
	// of one type, random pairs cover the rest.
	for i := range 5 * n {
		a, b := i%n, (i+1)%n
		if i >= n {
			a, b = g.rng.IntN(n), g.rng.IntN(n)
		}
		want := Compare(values[a], values[b])
		if back := Compare(values[b], values[a]); back != -want {
			t.Fatalf("Compare(%v, %v) = %d but reversed = %d", values[a], values[b], want, back)
		}
		if got := bytes.Compare(keys[a], keys[b]); got != want {
			t.Fatalf("Compare(%v, %v) = %d, keys compare %d\n%x\n%x", values[a], values[b], want, got, keys[a], keys[b])
		}
		if got := bytes.Compare(descKeys[a], descKeys[b]); got != -want {
			t.Fatalf("Compare(%v, %v) = %d, descending keys compare %d", values[a], values[b], want, got)
		}
	}
}

// TestCompareNumbersExactly checks the fast paths against comparing as
// rationals.
func TestCompareNumbersExactly(t *testing.T) {
	g := newValueGen(2)
	for range 20000 {
		a, b := readNumber(g.number()), readNumber(g.number())
		want := cmp.Compare(a.kind(), b.kind())
		if want == 0 && a.kind() == kindFinite {
			want = a.rat().Cmp(b.rat())
		}
		if got := compareNumbers(a, b); got != want {
			t.Fatalf("compareNumbers(%+v, %+v) = %d, as rationals %d", a, b, got, want)
		}
	}
}

func TestCompoundKeys(t *testing.T) {
	g := newValueGen(3)
	type row struct {
		first, second, third bsoncore.Value
		key                  []byte
	}
	rows := make([]row, 2000)
	for i := range rows {
		// Few distinct first fields, so that the second field decides often.
		r := row{first: g.rare(), second: g.value(2), third: i32(int32(i % 3))}
		if g.rng.IntN(2) == 0 {
			r.first = str(g.text())
		}
		r.key = AppendDesc(Append(nil, r.first), r.second)
		r.key = Append(r.key, r.third)
		rows[i] = r
	}
	for i := range rows {
		a, b := rows[i], rows[(i*7+1)%len(rows)]
		want := cmp.Or(
			Compare(a.first, b.first),
			-Compare(a.second, b.second),
			Compare(a.third, b.third))
		if got := bytes.Compare(a.key, b.key); got != want {
			t.Fatalf("compound keys (%v, %v desc) and (%v, %v desc) compare %d, want %d",
				a.first, a.second, b.first, b.second, got, want)
		}
		rest := a.key
		for field := range 3 {
			n, err := Skip(rest)
			if err != nil {
				t.Fatalf("Skip field %d of %x: %v", field, a.key, err)
			}
			rest = rest[n:]
		}
		if len(rest) != 0 {
			t.Fatalf("%d bytes left after skipping 3 fields of %x", len(rest), a.key)
		}
	}
}
