package keycodec

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzEncodeOrder checks that keys order as Compare does, for any pair of
// values, malformed ones included.
func FuzzEncodeOrder(f *testing.F) {
	groups := loadOrderGroups(f)
	var prev bsoncore.Value
	for _, members := range groups {
		for _, v := range members {
			if prev.Type != 0 {
				f.Add(byte(prev.Type), prev.Data, byte(v.Type), v.Data)
			}
			prev = v
		}
	}
	f.Fuzz(func(t *testing.T, typeA byte, dataA []byte, typeB byte, dataB []byte) {
		a := bsoncore.Value{Type: bsoncore.Type(typeA), Data: dataA}
		b := bsoncore.Value{Type: bsoncore.Type(typeB), Data: dataB}
		want := Compare(a, b)
		if back := Compare(b, a); back != -want {
			t.Fatalf("Compare(a, b) = %d, Compare(b, a) = %d", want, back)
		}
		keyA, keyB := Append(nil, a), Append(nil, b)
		if got := bytes.Compare(keyA, keyB); got != want {
			t.Fatalf("Compare = %d, keys compare %d\n%x\n%x", want, got, keyA, keyB)
		}
		if got := bytes.Compare(AppendDesc(nil, a), AppendDesc(nil, b)); got != -want {
			t.Fatalf("Compare = %d, descending keys compare %d", want, got)
		}
		if n, err := Skip(keyA); n != len(keyA) || err != nil {
			t.Fatalf("Skip(%x) = %d, %v; want %d", keyA, n, err, len(keyA))
		}
	})
}

// FuzzSkip checks that Skip survives arbitrary bytes.
func FuzzSkip(f *testing.F) {
	for _, members := range loadOrderGroups(f) {
		for _, v := range members {
			f.Add(Append(nil, v))
			f.Add(AppendDesc(nil, v))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Skip(b)
		if err == nil && (n <= 0 || n > len(b)) {
			t.Fatalf("Skip(%x) = %d, outside the input", b, n)
		}
	})
}
