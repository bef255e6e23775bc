package update

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

func compileStages(t *testing.T, stages ...string) *Update {
	t.Helper()
	var raws []bson.Raw
	for _, s := range stages {
		var d bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
			t.Fatal(err)
		}
		raws = append(raws, d)
	}
	u, err := CompilePipeline(raws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPipelineStopsWithContext(t *testing.T) {
	u := compileStages(t, `{"$set": {"x": {"$map": {"input": {"$range": [0, 1000000]}, "in": {"$add": ["$$this", 1]}}}}}`)
	doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := u.ApplyContext(ctx, doc, -1); !errors.Is(err, context.Canceled) {
		t.Errorf("a long pipeline with an ended context: %v, want context.Canceled", err)
	}
}

func TestPipelineValueSizeLimit(t *testing.T) {
	for _, stage := range []string{
		`{"$set": {"x": {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}}}`,
		`{"$replaceWith": {"x": {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": "ab", "in": {"$concat": ["$$value", "$$value"]}}}}}`,
	} {
		u := compileStages(t, stage)
		doc, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
		if _, _, err := u.Apply(doc, -1); mongoerr.CodeOf(err) != mongoerr.BSONObjectTooLarge {
			t.Errorf("%.40s: %v, want BSONObjectTooLarge", stage, err)
		}
	}
}
