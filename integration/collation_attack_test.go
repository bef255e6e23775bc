package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCollationOfLargeStrings attacks with the expensive shape of
// collation: comparisons of large strings, whose collation keys are about
// five times their size. Filters, a sort and a $group under a collation
// run over documents of 2 MiB strings while a bystander pings: the keys
// of a filter are made one comparison at a time, and those a sort or a
// $group keeps count against their limits, which spill or fail as
// without a collation. Limits lower than the defaults (100 and 256 MiB),
// as in TestSortOfComputedFields, keep the whole test process's heap,
// garbage included, under its bound.
func TestCollationOfLargeStrings(t *testing.T) {
	ts := startServer(t, withMemoryLimits(32<<20, 64<<20))
	db := attacker(t, ts)
	coll := db.Collection("collated")
	insertBig(t, coll, 8, 2<<20)
	ci := &options.Collation{Locale: "en", Strength: 2}
	settleHeap()
	var errs []error
	underAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		for start := time.Now(); time.Since(start) < time.Second; {
			cur, err := coll.Find(ctx, bson.D{{Key: "big", Value: bson.D{{Key: "$gt", Value: "b"}}}}, options.Find().SetCollation(ci).SetProjection(bson.D{{Key: "_id", Value: 1}}))
			if err == nil {
				err = cur.All(ctx, &[]bson.Raw{})
			}
			errs = append(errs, err)
			cur, err = coll.Find(ctx, bson.D{}, options.Find().SetCollation(ci).SetSort(bson.D{{Key: "big", Value: -1}}).SetProjection(bson.D{{Key: "_id", Value: 1}}))
			if err == nil {
				err = cur.All(ctx, &[]bson.Raw{})
			}
			errs = append(errs, err)
			cur, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$big"}}}}, {{Key: "$count", Value: "n"}}}, options.Aggregate().SetCollation(ci))
			if err == nil {
				err = cur.All(ctx, &[]bson.Raw{})
			}
			errs = append(errs, err)
		}
	})
	for _, err := range errs {
		// Within the limits, or refused by one (the $group's keys past
		// the query's memory limit: ExceededMemoryLimit).
		if err != nil && errCode(err) != 146 && errCode(err) != 292 {
			t.Errorf("a collated request failed: %v", err)
			break
		}
	}
}
