package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The collated-sort workload sorts cfg.collatedDocs strings under a
// collation ({locale: "fr", strength: 2}: accents count, case does not)
// and, for comparison, under the simple collation, one client at a time:
// each run sorts the whole collection, which is what a locale-correct
// listing without an index costs.

// collatedLetters are what the sorted strings are made of: letters in both
// cases, accented ones and a space, so that the collation has work to do.
var collatedLetters = []rune("abcdeéèêfghijklmnoôpqrstuùvwxyzABCDEÉFGHIJKLMNOPQRSTUVWXYZ ")

// collatedString is the string of document i: 6 to 15 letters, the same
// for i on every run.
func collatedString(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	var b strings.Builder
	for range 6 + r.IntN(10) {
		b.WriteRune(collatedLetters[r.IntN(len(collatedLetters))])
	}
	return b.String()
}

// runCollatedSort loads the strings and times a $sort of all of them under
// the collation and under the simple one; both end in a $group that checks
// the count, so that what is timed is the sort, not the transfer.
func runCollatedSort(ctx context.Context, e *env) ([]result, error) {
	n := e.cfg.collatedDocs
	coll := e.db.Collection("collated_sort")
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	e.logf("loading %d strings for the collated-sort workload", n)
	err := bulkLoad(ctx, coll, n, e.cfg.clients, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "s", Value: collatedString(i)}}
	})
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	pipeline := mongo.Pipeline{
		{{Key: "$sort", Value: bson.D{{Key: "s", Value: 1}, {Key: "_id", Value: 1}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "first", Value: bson.D{{Key: "$first", Value: "$s"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	}
	var out []result
	for _, c := range []struct {
		name      string
		collation *options.Collation
	}{
		{"collated-sort", &options.Collation{Locale: "fr", Strength: 2}},
		{"simple-sort", nil},
	} {
		opts := options.Aggregate().SetAllowDiskUse(true)
		if c.collation != nil {
			opts.SetCollation(c.collation)
		}
		s, err := measureFor(ctx, 1, e.cfg.duration, func(int) op {
			return func(ctx context.Context) error {
				cur, err := coll.Aggregate(ctx, pipeline, opts)
				if err != nil {
					return err
				}
				var res []struct {
					N int64 `bson:"n"`
				}
				if err := cur.All(ctx, &res); err != nil {
					return err
				}
				if len(res) != 1 || res[0].N != int64(n) {
					return fmt.Errorf("%s sorted %v, want %d strings", c.name, res, n)
				}
				return nil
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out = append(out, result{name: c.name, sample: s})
	}
	return out, nil
}
