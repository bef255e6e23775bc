package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestTextSearchAttack: the expensive shapes of $text, while a bystander
// is measured: a phrase of stop words only (no term to look up: MongoDB
// returns nothing, and so must Lethe, at once, not by reading every
// document), and searches of thousands of terms, sorted by score, which
// read many index ranges and score many documents; they end within
// maxTimeMS or complete, and memory stays bounded.
func TestTextSearchAttack(t *testing.T) {
	ts := startServer(t)
	client := ts.NewClient(t)
	coll := client.Database("attack").Collection("articles")
	ctx := context.Background()
	const n = 20000
	docs := make([]any, 0, 1000)
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "body", Value: fmt.Sprintf("the word%d and the word%d of the common coffee shop %d", i%500, i%37, i)}})
		if len(docs) == cap(docs) {
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "body", Value: "text"}}}); err != nil {
		t.Fatal(err)
	}
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "word%d term%d ", i, i)
	}
	completed := 0
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		// Stop words only, as terms and as a phrase: nothing to match.
		for _, q := range []string{"the and of the", `"the and of the"`, `-the "of the"`} {
			start := time.Now()
			cur, err := coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: q}}}})
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			var got []bson.Raw
			if err := cur.All(ctx, &got); err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			if len(got) != 0 {
				t.Errorf("%q matched %d documents, want none", q, len(got))
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%q took %v: a search without terms must not read the collection", q, d)
			}
		}
		// 10,000 terms, every document matching, sorted by score: within
		// its time limit or done.
		for range 3 {
			opts := options.Find().SetSort(bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).
				SetProjection(bson.D{{Key: "s", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).SetLimit(10)
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			cur, err := coll.Find(qctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: many.String()}}}}, opts)
			if err != nil {
				cancel()
				if !mongo.IsTimeout(err) {
					t.Fatalf("many terms: %v", err)
				}
				continue
			}
			var got []bson.Raw
			err = cur.All(qctx, &got)
			cancel()
			if err != nil && !mongo.IsTimeout(err) {
				t.Fatalf("many terms: %v", err)
			}
			if err == nil {
				completed++
				if len(got) != 10 {
					t.Errorf("many terms: %d documents, want 10", len(got))
				}
			}
		}
	})
	t.Logf("%d of 3 searches of 10,000 terms completed within 2s", completed)
}
