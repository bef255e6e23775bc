package keycodec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func benchmarkAppend(b *testing.B, v bsoncore.Value) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], v)
	}
}

func BenchmarkAppendObjectID(b *testing.B) {
	oid := [12]byte{0x65, 0x1f, 0x3a, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	benchmarkAppend(b, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]})
}

func BenchmarkAppendString(b *testing.B) {
	benchmarkAppend(b, str("user@example.com"))
}

func BenchmarkAppendInt64(b *testing.B) {
	benchmarkAppend(b, i64(1<<53+1))
}

func BenchmarkAppendDecimal(b *testing.B) {
	benchmarkAppend(b, dec("0.1"))
}
