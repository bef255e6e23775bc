package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/mongoerr"
)

// TestInsertCountsOnlyWhatCommitted inserts more than the disk holds in one
// command: n must be the documents that are there, and every other one gets
// its own write error (the first only, for an ordered insert), never a bare
// error that hides the batches that did commit.
func TestInsertCountsOnlyWhatCommitted(t *testing.T) {
	for _, ordered := range []bool{true, false} {
		d := pebblekv.NewMemDisk(testDiskSize)
		e := openOnDisk(t, d)
		const total = 20_000 // about 20 MB of incompressible documents
		docs := make([]bson.Raw, total)
		for i := range docs {
			docs[i] = padded(i)
		}
		res, err := e.Insert(context.Background(), "test", "c", docs, ordered)
		if err != nil {
			t.Fatalf("ordered=%v: insert failed as a whole: %v", ordered, err)
		}
		if res.N == 0 || res.N == total {
			t.Fatalf("ordered=%v: n=%d of %d on a %d-byte disk", ordered, res.N, total, testDiskSize)
		}
		t.Logf("ordered=%v: n=%d, %d write errors", ordered, res.N, len(res.Errors))
		for _, we := range res.Errors {
			if me, ok := mongoerr.As(we.Err); !ok || me.Code != mongoerr.OutOfDiskSpace {
				t.Fatalf("ordered=%v: write error %d: %v, want OutOfDiskSpace", ordered, we.Index, we.Err)
			}
		}
		// Each document is stored, or has its write error: not both, not
		// neither. An ordered insert stops at its one error; an unordered
		// one goes on, and later batches may commit once space is back.
		stored, err := e.Count(context.Background(), "test", "c", nil, 0, 0, bson.RawValue{})
		if err != nil {
			t.Fatal(err)
		}
		if stored != int64(res.N) {
			t.Fatalf("ordered=%v: n=%d but %d documents are stored", ordered, res.N, stored)
		}
		failed := map[int]bool{}
		for _, we := range res.Errors {
			failed[we.Index] = true
		}
		if ordered {
			if len(res.Errors) != 1 || res.Errors[0].Index != res.N {
				t.Fatalf("ordered: n=%d, write errors %v; want one, at index %d", res.N, res.Errors, res.N)
			}
			countDocs(t, e, 0, res.N)
		} else {
			if len(res.Errors)+res.N != total {
				t.Fatalf("unordered: n=%d and %d write errors do not add up to %d", res.N, len(res.Errors), total)
			}
			for i := range total {
				doc, err := e.FindByID(context.Background(), "test", "c", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))})
				if err != nil {
					t.Fatal(err)
				}
				if (doc != nil) == failed[i] {
					t.Fatalf("unordered: document %d stored=%v, write error=%v", i, doc != nil, failed[i])
				}
			}
		}
		e.Close()
	}
}

// TestDeleteCountsOnlyWhatCommitted deletes from a store that can commit
// nothing: n must say that nothing was deleted, not the size of the batch
// whose commit failed.
func TestDeleteCountsOnlyWhatCommitted(t *testing.T) {
	d := pebblekv.NewMemDisk(testDiskSize)
	e := openOnDisk(t, d)
	const n = 1500 // more than one batch of deletions
	docs := make([]bson.Raw, n)
	for i := range docs {
		docs[i] = padded(i)
	}
	if err := insertErr(e.Insert(context.Background(), "test", "c", docs, true)); err != nil {
		t.Fatal(err)
	}
	// Too full to replay the log: the store opens read-only.
	e = reopenTooFullToReplay(t, e, d)
	defer e.Close()
	deleted, err := e.Delete(context.Background(), "test", "c", nil, 0, bson.RawValue{})
	wantOutOfDisk(t, err)
	if deleted != 0 {
		t.Fatalf("delete reports %d documents removed; none were", deleted)
	}
	countDocs(t, e, 0, n)
}
