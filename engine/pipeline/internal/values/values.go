package values

import (
	"context"
	"math"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/expr"
)

// Null is BSON null.
var Null = bsoncore.Value{Type: bsoncore.TypeNull}

// EmptyDoc is the empty document.
var EmptyDoc = bsoncore.NewDocumentBuilder().Build()

// Double is f as a BSON double.
func Double(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// Int64 is n as a BSON int64.
func Int64(n int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)}
}

// IsNumeric reports whether v is a number of any BSON type.
func IsNumeric(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// ToFloat is the value of a number as a double.
func ToFloat(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(v.Int32())
	case bsoncore.TypeInt64:
		return float64(v.Int64())
	case bsoncore.TypeDouble:
		return v.Double()
	case bsoncore.TypeDecimal128:
		if r, ok := bsonvalue.DecimalRat(v); ok {
			f, _ := r.Float64()
			return f
		}
		return math.NaN()
	}
	return 0
}

// SetPath returns doc with the value at path set to v, in place of the
// field it replaces or after the last field; v of Type 0 removes it. A
// missing or non-document step on the way becomes a document.
func SetPath(doc []byte, path []string, v bsoncore.Value) []byte {
	b := bsoncore.NewDocumentBuilder()
	found := false
	it := bsonvalue.ElementsOf(doc)
	for {
		k, val, ok := it.Next()
		if !ok {
			break
		}
		key := string(k)
		if key != path[0] {
			b.AppendValue(key, val)
			continue
		}
		found = true
		if len(path) == 1 {
			if v.Type != 0 {
				b.AppendValue(key, v)
			}
			continue
		}
		var sub []byte = EmptyDoc
		if val.Type == bsoncore.TypeEmbeddedDocument {
			sub = val.Data
		}
		b.AppendDocument(key, SetPath(sub, path[1:], v))
	}
	if !found && v.Type != 0 {
		if len(path) == 1 {
			b.AppendValue(path[0], v)
		} else {
			b.AppendDocument(path[0], SetPath(EmptyDoc, path[1:], v))
		}
	}
	return b.Build()
}

// TypeName names the type of v for errors; missing is "missing".
func TypeName(v bsoncore.Value) string {
	if v.Type == 0 {
		return "missing"
	}
	return bsonvalue.TypeName(v.Type)
}

// TypeNameOf names the type of a stage's argument for errors.
func TypeNameOf(v bson.RawValue) string {
	return bsonvalue.TypeName(bsoncore.Type(v.Type))
}

// EvalOrNull evaluates ex, giving null for a missing result.
func EvalOrNull(ctx context.Context, ex *expr.Expr, doc bson.Raw) (bsoncore.Value, error) {
	v, err := ex.EvalContext(ctx, doc)
	if err == nil && v.Type == 0 {
		v = Null
	}
	return v, err
}

// Own returns v, which may point into doc, as a value a group can keep: a
// copy, unless v is most of doc, which the group then keeps whole rather
// than holding its bytes twice.
func Own(v bsoncore.Value, doc bson.Raw) bsoncore.Value {
	if 2*len(v.Data) > len(doc) {
		return v
	}
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

// ArraySize is the encoded size of an array of values.
func ArraySize(values []bsoncore.Value) int {
	n := 5
	for i, v := range values {
		n += 2 + len(strconv.Itoa(i)) + len(v.Data)
	}
	return n
}

// ArrayOf builds an array of values.
func ArrayOf(values []bsoncore.Value) bsoncore.Value {
	arr := bsoncore.NewArrayBuilder()
	for _, v := range values {
		arr.AppendValue(v)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}
}

// Nullish reports whether v is missing, null or undefined, the values
// $fill and the filling window functions fill.
func Nullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}
