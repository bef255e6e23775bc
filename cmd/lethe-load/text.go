package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The text workload: $text searches over cfg.textDocs documents of
// generated prose with a text index, each sorted by its score and cut to
// the best findBatch, as a search box asks.

const (
	textVocabulary = 5000 // distinct words of the generated prose
	textWords      = 30   // words of a document
)

// textWord is word i of the vocabulary: pronounceable, distinct, and not
// an English stop word.
func textWord(i int) string {
	const cons, vows = "bcdfghjklmnprstvz", "aeiou"
	var b strings.Builder
	for n := i + len(cons); n > 0; n /= len(cons) * len(vows) {
		b.WriteByte(cons[n%len(cons)])
		b.WriteByte(vows[(n/len(cons))%len(vows)])
	}
	b.WriteString("x")
	return b.String()
}

// zipfWords picks words with a skew like prose's: few common, many rare.
func zipfWords(rng *rand.Rand) *rand.Zipf {
	return rand.NewZipf(rng, 1.1, 1, textVocabulary-1)
}

func runText(ctx context.Context, e *env) ([]result, error) {
	n := e.cfg.textDocs
	coll := e.db.Collection("text")
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	e.logf("loading %d documents of %d words for the text workload", n, textWords)
	err := bulkLoad(ctx, coll, n, e.cfg.clients, func(i int) bson.D {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		z := zipfWords(rng)
		words := make([]string, textWords)
		for j := range words {
			words[j] = textWord(int(z.Uint64()))
		}
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "title", Value: strings.Join(words[:4], " ")}, {Key: "body", Value: strings.Join(words[4:], " ")}}
	})
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	e.logf("building the text index")
	began := time.Now()
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "title", Value: "text"}, {Key: "body", Value: "text"}},
		Options: options.Index().SetWeights(bson.D{{Key: "title", Value: 5}}),
	})
	if err != nil {
		return nil, fmt.Errorf("create the text index on %d documents: %w", n, err)
	}
	e.logf("text index built in %v", time.Since(began).Round(time.Millisecond))

	search := func(client int) op {
		rng := clientRand(client)
		// Searches ask for words of middling frequency, as people search
		// for what sets documents apart: the 200th to the 2000th.
		return func(ctx context.Context) error {
			q := textWord(200+rng.IntN(1800)) + " " + textWord(200+rng.IntN(1800))
			opts := options.Find().
				SetProjection(bson.D{{Key: "title", Value: 1}, {Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).
				SetSort(bson.D{{Key: "score", Value: bson.D{{Key: "$meta", Value: "textScore"}}}}).
				SetLimit(findBatch)
			cur, err := coll.Find(ctx, bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: q}}}}, opts)
			if err != nil {
				return err
			}
			last := -1.0
			for cur.Next(ctx) {
				s := cur.Current.Lookup("score").Double()
				if last >= 0 && s > last {
					return fmt.Errorf("$text %q: scores out of order: %v after %v", q, s, last)
				}
				last = s
			}
			return errors.Join(cur.Err(), cur.Close(ctx))
		}
	}
	s, err := e.measure(ctx, search)
	if err != nil {
		return nil, fmt.Errorf("text search: %w", err)
	}
	return []result{{name: "text-search", sample: s}}, nil
}
