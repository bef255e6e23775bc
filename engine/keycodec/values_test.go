package keycodec

import (
	"os"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Constructors for test values.

func i32(i int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, i)}
}

func i64(i int64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, i)}
}

func dbl(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

func dec(s string) bsoncore.Value {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	hi, lo := d.GetBytes()
	return decBits(hi, lo)
}

func decBits(hi, lo uint64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDecimal128, Data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

func str(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// doc builds a document from alternating names and values.
func doc(namesAndValues ...any) bsoncore.Value {
	idx, d := bsoncore.AppendDocumentStart(nil)
	for i := 0; i < len(namesAndValues); i += 2 {
		d = bsoncore.AppendValueElement(d, namesAndValues[i].(string), namesAndValues[i+1].(bsoncore.Value))
	}
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

func arr(values ...bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.BuildArray(nil, values...)}
}

func key(v bsoncore.Value) []byte { return Append(nil, v) }

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// loadOrderGroups reads testdata/keycodec/order.json: groups of values in
// ascending order, the values within a group equal.
func loadOrderGroups(tb testing.TB) [][]bsoncore.Value {
	tb.Helper()
	data, err := os.ReadFile("../../testdata/keycodec/order.json")
	if err != nil {
		tb.Fatal(err)
	}
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON(data, false, &raw); err != nil {
		tb.Fatal(err)
	}
	groupsArr, ok := bsoncore.Document(raw).Lookup("groups").ArrayOK()
	if !ok {
		tb.Fatal("order.json: no groups array")
	}
	groupValues, err := groupsArr.Values()
	if err != nil {
		tb.Fatal(err)
	}
	groups := make([][]bsoncore.Value, len(groupValues))
	for i, g := range groupValues {
		members, err := g.Array().Values()
		if err != nil {
			tb.Fatal(err)
		}
		groups[i] = members
	}
	return groups
}
