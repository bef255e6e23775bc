package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lethedb/lethe/cursor"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestNoCursorTimeout checks that find's noCursorTimeout keeps an idle
// cursor open past the idle timeout, while a cursor without it closes.
func TestNoCursorTimeout(t *testing.T) {
	s, client, _ := startTestServer(t)
	ctx := context.Background()
	coll := client.Database("test").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	kept, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1).SetNoCursorTimeout(true))
	if err != nil {
		t.Fatal(err)
	}
	swept, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	s.cursors.SweepIdle(time.Now().Add(cursor.IdleTimeout + time.Minute))

	var all []bson.Raw
	if err := kept.All(ctx, &all); err != nil || len(all) != 2 {
		t.Errorf("noCursorTimeout cursor after the idle timeout: %d documents, %v; want 2", len(all), err)
	}
	if err := swept.All(ctx, &all); !isCode(err, 43) { // CursorNotFound
		t.Errorf("plain cursor after the idle timeout: %v, want CursorNotFound", err)
	}
}

func isCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}
