package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestBatchStopsBeforeMaxBytes(t *testing.T) {
	// Three documents of 6 MiB: a batch of at most 16 MiB holds two, and
	// the third starts the next batch, sorted or not.
	e := limitedEngine(t, 3, 6<<20, 100<<20, 256<<20)
	sortDesc, _ := bson.Marshal(bson.D{{Key: "big", Value: 1}, {Key: "_id", Value: -1}})
	for _, spec := range []FindSpec{{}, {Sort: sortDesc}} {
		cur, err := e.Find(context.Background(), "db", "c", spec)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for !cur.Exhausted() {
			b, err := cur.NextBatch(context.Background(), 0, 16<<20)
			if err != nil {
				t.Fatal(err)
			}
			size := 0
			for _, d := range b {
				size += len(d)
			}
			if size > 16<<20 {
				t.Errorf("sort %v: a batch of %d documents, %d bytes", spec.Sort, len(b), size)
			}
			sizes = append(sizes, len(b))
		}
		if len(sizes) != 2 || sizes[0] != 2 || sizes[1] != 1 {
			t.Errorf("sort %v: batches of %v documents, want [2 1]", spec.Sort, sizes)
		}
	}
}
