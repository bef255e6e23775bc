package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/pipeline"
)

// TestGraphLookupSetsUnderCollation follows MongoDB's
// src/mongo/db/pipeline/document_source_graph_lookup.cpp: the frontier of
// values to look for, and the cache of values looked for, are sets under
// the aggregation's collation (pExpCtx->getValueComparator()), so "Y" and
// "y" under strength 2 are one value to look for, and a cycle back to "X"
// after "x" was looked for queries nothing more; the documents found are
// one by their _id under the simple collation
// (ValueComparator::kInstance), so _ids "a" and "A" stay two documents.
func TestGraphLookupSetsUnderCollation(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "db", "graph",
		bson.D{{Key: "_id", Value: "a"}, {Key: "k", Value: "x"}, {Key: "v", Value: bson.A{"Y", "y"}}},
		bson.D{{Key: "_id", Value: "A"}, {Key: "k", Value: "y"}, {Key: "v", Value: "X"}},
	)
	coll, err := collation.Parse(mustRaw(t, enStrength2))
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithCollation(context.Background(), coll.Document())
	opts := e.pipelineOptions("db", AggregateOptions{})
	opts.Collator = coll
	rec := &recordingCatalog{Catalog: opts.Catalog}
	opts.Catalog = rec
	p, err := pipeline.Compile([]bson.Raw{mustMarshal(t, bson.D{{Key: "$graphLookup", Value: bson.D{
		{Key: "from", Value: "graph"}, {Key: "startWith", Value: "x"}, {Key: "connectFromField", Value: "v"},
		{Key: "connectToField", Value: "k"}, {Key: "as", Value: "g"}, {Key: "depthField", Value: "d"}}}})}, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(ctx, pipeline.Slice([]bson.Raw{mustMarshal(t, bson.D{{Key: "_id", Value: 1}})}))
	if err != nil {
		t.Fatal(err)
	}
	found, _ := out[0].Lookup("g").Array().Values()
	if len(found) != 2 {
		t.Errorf("found %v, want the documents with _id a and A", found)
	}
	// Two reads: x, then Y (and y, one value with it); the cycle's X was
	// looked for already, as x.
	if len(rec.filters) != 2 {
		t.Fatalf("%d reads, want 2: %v", len(rec.filters), rec.filters)
	}
	in, err := rec.filters[1].LookupErr("$and", "0", "k", "$in")
	if err != nil {
		t.Fatalf("second read %v: %v", rec.filters[1], err)
	}
	if vals, _ := in.Array().Values(); len(vals) != 1 {
		t.Errorf("second read looks for %v, want Y alone", vals)
	}
}
