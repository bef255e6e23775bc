package pipeline

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// BenchmarkGroupLowCardinality groups 1,000,000 documents by a key of ten
// values, summing and averaging a field: the cost of $group per document,
// without reading a collection.
func BenchmarkGroupLowCardinality(b *testing.B) {
	const n = 1_000_000
	docs := make([]bson.Raw, n)
	for i := range docs {
		docs[i], _ = bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 10}, {Key: "v", Value: float64(i)}, {Key: "s", Value: "padding text"}})
	}
	var spec bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"$group": {"_id": "$k", "n": {"$sum": 1}, "t": {"$sum": "$v"}, "a": {"$avg": "$v"}}}`), false, &spec); err != nil {
		b.Fatal(err)
	}
	p, err := Compile([]bson.Raw{spec}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := p.Run(context.Background(), Slice(docs))
		if err != nil || len(out) != 10 {
			b.Fatalf("%d groups, %v", len(out), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/doc")
}
