package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/mongoerr"
)

// The query conformance files run a third time on a collection with a
// hashed index on every field that holds no array (a hashed field refuses
// them, 16766), so that the plans of hashed indexes, used for equality and
// $in, find what a collection scan finds.

func hashedOf(indexed string) string { return "hashed_" + indexed }

func loadHashed(t *testing.T, e *Engine, file, coll string, docs []bson.Raw, extra []string) {
	t.Helper()
	if len(docs) > 0 {
		res, err := e.Insert(context.Background(), "conf", coll, docs, true)
		if err != nil || len(res.Errors) > 0 {
			t.Fatalf("%s: insert: %v %v", file, err, res.Errors)
		}
	}
	for _, p := range append(indexedPaths(docs), extra...) {
		spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: p, Value: "hashed"}}}})
		_, err := e.CreateIndexes(context.Background(), "conf", coll, []bson.Raw{spec})
		switch code := mongoerr.CodeOf(err); {
		case err == nil:
		case code == record.HashedArray, code == record.AmbiguousFieldName:
			// MongoDB cannot build this index on these documents either.
		default:
			t.Fatalf("%s: hashed index on %s: %v", file, p, err)
		}
	}
}
