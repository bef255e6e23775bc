package query

import "testing"

const benchDoc = `{"_id": {"$oid": "64b000000000000000000001"}, "a": 7, "b": "hello", "c": 3.5,
	"d": {"e": 1, "f": "x"}, "g": [1, 2, 3], "h": true, "i": null, "j": {"$numberLong": "42"},
	"k": {"$date": "2024-01-01T00:00:00Z"}}`

func benchmarkMatch(b *testing.B, filter string) {
	f := mustCompile(b, filter)
	doc := raw(b, benchDoc)
	if !f.Match(doc) {
		b.Fatalf("%s does not match", filter)
	}
	b.ReportAllocs()
	for b.Loop() {
		f.Match(doc)
	}
}

func BenchmarkMatchID(b *testing.B) {
	benchmarkMatch(b, `{"_id": {"$oid": "64b000000000000000000001"}}`)
}

func BenchmarkMatchGT(b *testing.B) {
	benchmarkMatch(b, `{"a": {"$gt": 5}}`)
}

func BenchmarkMatchLastField(b *testing.B) {
	benchmarkMatch(b, `{"k": {"$gte": {"$date": "2023-01-01T00:00:00Z"}}}`)
}

func BenchmarkMatchRegex(b *testing.B) {
	benchmarkMatch(b, `{"b": {"$regex": "^hel", "$options": "i"}}`)
}
