package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAggregateSpilledSortStreams: an aggregation's $sort over more than
// a request may hold in memory spills and is read from disk as the
// cursor is read, as find's sort is; mongod's aggregation cursors stream
// from the sorter (document_source_sort.cpp) with no bound of their own
// on the result. A pipeline whose stages take one document at a time
// ($lookup, $unwind, then $count) holds one document at a time, as
// mongod's $lookup does (document_source_lookup.cpp: doGetNext per
// input document). Issue 17, item 22.
func TestAggregateSpilledSortStreams(t *testing.T) {
	const n = 8000 // about 8 MiB, twice the request's memory
	ts := startServer(t, withMemoryLimits(1<<20, 4<<20))
	db := ts.Client.Database("aggstream")
	coll := db.Collection("c")
	insertSpillDocs(t, coll, n, 100)
	var small []any
	for k := 0; k < 100; k++ {
		small = append(small, bson.D{{Key: "_id", Value: int32(k)}, {Key: "k", Value: int32(k)}})
	}
	if _, err := db.Collection("keys").InsertMany(testCtx(t), small); err != nil {
		t.Fatal(err)
	}

	wantSorted := func(name string, pipeline mongo.Pipeline) {
		t.Helper()
		cur, err := coll.Aggregate(testCtx(t), pipeline, options.Aggregate().SetAllowDiskUse(true))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer cur.Close(testCtx(t))
		i := 0
		for cur.Next(testCtx(t)) {
			if v := cur.Current.Lookup("v").Int32(); v != int32(i) {
				t.Fatalf("%s: document %d has v %d", name, i, v)
			}
			i++
		}
		if err := cur.Err(); err != nil {
			t.Fatalf("%s after %d documents: %v", name, i, err)
		}
		if i != n {
			t.Fatalf("%s: %d documents, want %d", name, i, n)
		}
	}
	// The $sort the query runs, and one the pipeline runs after a stage
	// the query cannot.
	wantSorted("leading $sort", mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "v", Value: 1}}}}})
	wantSorted("$sort after $set", mongo.Pipeline{
		{{Key: "$set", Value: bson.D{{Key: "w", Value: bson.D{{Key: "$add", Value: bson.A{"$v", 1}}}}}}},
		{{Key: "$sort", Value: bson.D{{Key: "w", Value: 1}}}},
	})

	cur, err := coll.Aggregate(testCtx(t), mongo.Pipeline{
		{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "keys"}, {Key: "localField", Value: "k"}, {Key: "foreignField", Value: "k"}, {Key: "as", Value: "j"}}}},
		{{Key: "$unwind", Value: "$j"}},
		{{Key: "$count", Value: "n"}},
	})
	if err != nil {
		t.Fatalf("$lookup, $unwind, $count: %v", err)
	}
	var got []bson.Raw
	if err := cur.All(testCtx(t), &got); err != nil {
		t.Fatalf("$lookup, $unwind, $count: %v", err)
	}
	if len(got) != 1 || got[0].Lookup("n").Int32() != n {
		t.Fatalf("$lookup, $unwind, $count: %v, want n: %d", got, n)
	}
	if files := tempFiles(t, ts); len(files) != 0 {
		t.Errorf("temporary files left: %v", files)
	}
}
