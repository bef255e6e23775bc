package keycodec

import (
	"bytes"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// numbersInOrder are numeric edge cases built from Go constants, ascending,
// each group's members equal.
func numbersInOrder() [][]bsoncore.Value {
	return [][]bsoncore.Value{
		{dbl(math.NaN()), dbl(-math.NaN()), dec("NaN")},
		{dbl(math.Inf(-1)), dec("-Infinity")},
		{dbl(-math.MaxFloat64)},
		{i64(math.MinInt64), dbl(-0x1p63), dec("-9223372036854775808")},
		{i64(math.MinInt64 + 1)},
		{i64(-1<<53 - 1), dec("-9007199254740993")},
		{dbl(-1 << 53), i64(-1 << 53)},
		{i64(-1<<53 + 1), dbl(-1<<53 + 1)},
		{i32(math.MinInt32), i64(math.MinInt32), dbl(math.MinInt32)},
		{i32(-1), i64(-1), dbl(-1), dec("-1.0")},
		{dbl(-0.5), dec("-0.5")},
		{dbl(-math.SmallestNonzeroFloat64)},
		{dec("-1E-400")},
		{dbl(0), dbl(math.Copysign(0, -1)), i32(0), i64(0), dec("0"), dec("-0E-10")},
		{dec("1E-400")},
		{dbl(math.SmallestNonzeroFloat64)},
		{dec("0.1")},
		{dbl(0.1)},
		{dbl(0.5), dec("0.5")},
		{i32(1), i64(1), dbl(1), dec("1"), dec("1.0")},
		{dbl(math.Nextafter(1, 2))},
		{i32(math.MaxInt32), i64(math.MaxInt32), dbl(math.MaxInt32)},
		{dbl(1 << 53), i64(1 << 53), dec("9007199254740992")},
		{i64(1<<53 + 1), dec("9007199254740993")},
		{dbl(1<<53 + 2), i64(1<<53 + 2)},
		{i64(math.MaxInt64 - 1)},
		{i64(math.MaxInt64), dec("9223372036854775807")},
		{dbl(0x1p63), dec("9223372036854775808")},
		{dbl(math.MaxFloat64)},
		{dec("1E+400")},
		{dbl(math.Inf(1)), dec("Infinity")},
	}
}

func TestCompareNumbers(t *testing.T) {
	checkOrder(t, numbersInOrder())
}

func TestCompareOrderFile(t *testing.T) {
	checkOrder(t, loadOrderGroups(t))
}

func TestCompareNested(t *testing.T) {
	checkOrder(t, [][]bsoncore.Value{
		{doc()},
		{doc("a", doc("x", i32(1)))},
		{doc("a", doc("x", i32(1), "y", arr()))},
		{doc("a", doc("x", i32(1), "y", arr(str("")))), doc("a", doc("x", dbl(1), "y", arr(str(""))))},
		{doc("a", doc("x", i32(1), "y", arr(str("\x00"))))},
		{doc("a", doc("x", i32(2)))},
		{doc("a", doc("x", i32(2)), "b", doc())},
		{doc("a", arr())},
		{doc("z", arr())},
		{arr()},
		{arr(arr(arr()))},
		{arr(arr(arr(i32(1)), i32(2)))},
		{arr(arr(arr(i32(1)), i32(3)))},
		{arr(arr(arr(i32(2))))},
	})
}

func TestCompareDocuments(t *testing.T) {
	small := doc("a", i32(1)).Data
	large := doc("a", i32(1), "b", i32(0)).Data
	if got := CompareDocuments(small, large); got != -1 {
		t.Errorf("CompareDocuments(prefix, longer) = %d, want -1", got)
	}
	if got := CompareDocuments(large, doc("a", dbl(1), "b", dec("0")).Data); got != 0 {
		t.Errorf("CompareDocuments of numerically equal documents = %d, want 0", got)
	}
}

func TestTypeClass(t *testing.T) {
	ascending := []bsoncore.Type{
		bsoncore.TypeMinKey, bsoncore.TypeUndefined, bsoncore.TypeNull, bsoncore.TypeDouble,
		bsoncore.TypeString, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeBinary,
		bsoncore.TypeObjectID, bsoncore.TypeBoolean, bsoncore.TypeDateTime, bsoncore.TypeTimestamp,
		bsoncore.TypeRegex, bsoncore.TypeDBPointer, bsoncore.TypeJavaScript,
		bsoncore.TypeCodeWithScope, bsoncore.TypeMaxKey,
	}
	for i := 1; i < len(ascending); i++ {
		if TypeClass(ascending[i-1]) >= TypeClass(ascending[i]) {
			t.Errorf("TypeClass(%v) >= TypeClass(%v)", ascending[i-1], ascending[i])
		}
	}
	same := [][2]bsoncore.Type{
		{bsoncore.TypeInt32, bsoncore.TypeDouble},
		{bsoncore.TypeInt64, bsoncore.TypeDouble},
		{bsoncore.TypeDecimal128, bsoncore.TypeDouble},
		{bsoncore.TypeSymbol, bsoncore.TypeString},
	}
	for _, pair := range same {
		if TypeClass(pair[0]) != TypeClass(pair[1]) {
			t.Errorf("TypeClass(%v) != TypeClass(%v)", pair[0], pair[1])
		}
	}
}

func TestDecimalMaxCoefficient(t *testing.T) {
	d := decodeDecimal(dec("9999999999999999999999999999999999").Decimal128())
	if d.coefHi != decimalMaxCoefHi || d.coefLo != decimalMaxCoefLo {
		t.Errorf("10^34-1 decodes to %#x %#x, constants say %#x %#x",
			d.coefHi, d.coefLo, uint64(decimalMaxCoefHi), uint64(decimalMaxCoefLo))
	}
	// One more than the largest coefficient is non-canonical, so zero.
	if got := Compare(decBits(d.coefHi|0x3040000000000000, d.coefLo+1), i32(0)); got != 0 {
		t.Errorf("non-canonical decimal compares %d with 0, want 0", got)
	}
}

// checkOrder checks Compare, and the keys of Append and AppendDesc, on every
// pair of values from groups given in ascending order.
func checkOrder(t *testing.T, groups [][]bsoncore.Value) {
	t.Helper()
	type entry struct {
		group int
		v     bsoncore.Value
		asc   []byte
		desc  []byte
	}
	var all []entry
	for g, members := range groups {
		for _, v := range members {
			all = append(all, entry{g, v, Append(nil, v), AppendDesc(nil, v)})
		}
	}
	for _, a := range all {
		if n, err := Skip(a.asc); n != len(a.asc) || err != nil {
			t.Errorf("Skip(Append(%v)) = %d, %v; want %d", a.v, n, err, len(a.asc))
		}
		if n, err := Skip(a.desc); n != len(a.desc) || err != nil {
			t.Errorf("Skip(AppendDesc(%v)) = %d, %v; want %d", a.v, n, err, len(a.desc))
		}
		for _, b := range all {
			want := sign(a.group - b.group)
			if got := Compare(a.v, b.v); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", a.v, b.v, got, want)
			}
			if got := bytes.Compare(a.asc, b.asc); got != want {
				t.Errorf("keys of %v and %v compare %d, want %d\n%x\n%x", a.v, b.v, got, want, a.asc, b.asc)
			}
			if got := bytes.Compare(a.desc, b.desc); got != -want {
				t.Errorf("descending keys of %v and %v compare %d, want %d", a.v, b.v, got, -want)
			}
		}
	}
}
