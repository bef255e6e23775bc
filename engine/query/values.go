package query

import (
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
)

// isEmptyContainer reports whether a document or array has no elements.
func isEmptyContainer(container []byte) bool {
	it := bsonvalue.ElementsOf(container)
	_, _, ok := it.Next()
	return !ok
}

// isContainer reports whether v is a document or an array: both are BSON
// documents underneath, which some operators rely on.
func isContainer(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray
}

// isNaN reports whether v is a double or decimal NaN.
func isNaN(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return math.IsNaN(f)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		return bson.NewDecimal128(hi, lo).IsNaN()
	}
	return false
}

// isInfinite reports whether v is a double or decimal infinity.
func isInfinite(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return math.IsInf(f, 0)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		return bson.NewDecimal128(hi, lo).IsInf() != 0
	}
	return false
}

// truncatedValue returns a number rounded toward zero and clamped to the
// int64 range, as $mod reads its operands. NaN reports ok == false.
func truncatedValue(v bsoncore.Value) (n int64, ok bool) {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return bsonvalue.IntegerValue(v)
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return bsonvalue.ClampToInt64(f)
	case bsoncore.TypeDecimal128:
		hi, lo, _ := v.Decimal128OK()
		d := bson.NewDecimal128(hi, lo)
		if d.IsNaN() {
			return 0, false
		}
		if inf := d.IsInf(); inf != 0 {
			return bsonvalue.ClampToInt64(math.Inf(inf))
		}
		r, _ := bsonvalue.DecimalRat(v)
		q := new(big.Int).Quo(r.Num(), r.Denom())
		if !q.IsInt64() {
			return bsonvalue.ClampToInt64(float64(q.Sign()) * math.Inf(1))
		}
		return q.Int64(), true
	}
	return 0, false
}
