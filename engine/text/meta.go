package text

import (
	"context"

	"github.com/lethedb/lethe/mongoerr"
)

// scorerKey keys a request's text scorer in its context.
type scorerKey struct{}

// WithScorer returns ctx carrying score, the text score of the request's
// $text query, for {$meta: "textScore"} in the stages that follow it.
func WithScorer(ctx context.Context, score func(doc []byte) float64) context.Context {
	return context.WithValue(ctx, scorerKey{}, score)
}

// ScorerFrom returns the text scorer ctx carries, or nil.
func ScorerFrom(ctx context.Context) func(doc []byte) float64 {
	if ctx == nil {
		return nil
	}
	f, _ := ctx.Value(scorerKey{}).(func(doc []byte) float64)
	return f
}

// ErrNoScore is MongoDB's error for a text score asked of a query without
// $text.
func ErrNoScore() error {
	return mongoerr.New(40218, "query requires text score metadata, but it is not available")
}
