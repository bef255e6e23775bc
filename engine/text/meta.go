package text

import (
	"context"

	"github.com/lethedb/lethe/mongoerr"
)

// scorerKey keys a request's text scorer in its context.
type scorerKey struct{}

// Scorer gives a document's text score; ok is false for a document without
// one: under an $or, one found by another clause that the $text does not
// match.
type Scorer func(doc []byte) (score float64, ok bool)

// WithScorer returns ctx carrying score, the text score of the request's
// $text query, for {$meta: "textScore"} in the stages that follow it.
func WithScorer(ctx context.Context, score Scorer) context.Context {
	return context.WithValue(ctx, scorerKey{}, score)
}

// ScorerFrom returns the text scorer ctx carries, or nil.
func ScorerFrom(ctx context.Context) Scorer {
	if ctx == nil {
		return nil
	}
	f, _ := ctx.Value(scorerKey{}).(Scorer)
	return f
}

// ErrNoScore is MongoDB's error for a text score asked of a query without
// $text.
func ErrNoScore() error {
	return mongoerr.New(40218, "query requires text score metadata, but it is not available")
}
