package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The TTL documents carry ttl values spread evenly over 1..maxTTL seconds;
// advancing the clock past maxTTL makes every one of them due at once.
const (
	maxTTL  = 60
	advance = maxTTL + 1
)

// reaperPoll is how often the deletion counter is read while the reaper
// works: often enough to time a deletion of a second or two, rarely enough
// not to load the server.
const reaperPoll = 50 * time.Millisecond

// ttlResult is what the TTL workload measured.
type ttlResult struct {
	docs int
	load time.Duration
	// idle and reaping are findOne by _id before the clock moves, and while
	// the reaper deletes every document after it has.
	idle, reaping sample
	deleted       int64
	deleting      time.Duration // from the clock's move to the last poll
	complete      bool          // every document was deleted within --ttl-wait
}

func (r ttlResult) deletedPerSec() float64 {
	if r.deleting <= 0 {
		return 0
	}
	return float64(r.deleted) / r.deleting.Seconds()
}

// runTTL loads cfg.ttlDocs documents with a per-document ttl into a
// collection with TTL on, then measures reads with the reaper idle, moves
// the server's clock so every document expires, and measures reads again
// while the reaper deletes, along with its deletion rate. It needs a
// manual clock: its own in-process server has one; a --uri server must
// have been started with --clock=manual.
func runTTL(ctx context.Context, cfg config, progress io.Writer) (ttlResult, error) {
	res := ttlResult{docs: cfg.ttlDocs}
	t, err := openTarget(ctx, cfg, true)
	if err != nil {
		return res, err
	}
	res, err = measureTTL(ctx, cfg, t.client, progress)
	return res, errors.Join(err, t.close())
}

func measureTTL(ctx context.Context, cfg config, client *mongo.Client, progress io.Writer) (ttlResult, error) {
	res := ttlResult{docs: cfg.ttlDocs}
	admin := client.Database("admin")
	coll := client.Database(dbName).Collection("ttl")
	if err := drop(ctx, coll); err != nil {
		return res, err
	}
	ttlIndex := mongo.IndexModel{
		Keys:    bson.D{{Key: "_ts", Value: 1}},
		Options: options.Index().SetName("_ts_1").SetExpireAfterSeconds(-1),
	}
	if _, err := coll.Indexes().CreateOne(ctx, ttlIndex); err != nil {
		return res, fmt.Errorf("enable TTL with createIndexes {_ts: 1}, expireAfterSeconds -1: %w", err)
	}

	pad, err := padding(bson.D{{Key: "_id", Value: int64(0)}, {Key: "ttl", Value: int32(0)}, {Key: "n", Value: int32(0)}})
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "loading %d documents with ttl 1..%d s\n", cfg.ttlDocs, maxTTL)
	began := time.Now()
	err = bulkLoad(ctx, coll, cfg.ttlDocs, cfg.clients, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "ttl", Value: int32(1 + i%maxTTL)}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}}
	})
	if err != nil {
		return res, fmt.Errorf("load: %w", err)
	}
	res.load = time.Since(began)

	res.idle, err = measureFor(ctx, cfg.clients, cfg.duration, findTTLDoc(coll, cfg.ttlDocs, true))
	if err != nil {
		return res, fmt.Errorf("findOne with the reaper idle: %w", err)
	}

	before, err := deletedDocuments(ctx, admin)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "advancing the server clock by %d s\n", advance)
	if err := admin.RunCommand(ctx, bson.D{{Key: "advanceClock", Value: advance}}).Err(); err != nil {
		return res, fmt.Errorf("advanceClock (a --uri server must run with --clock=manual): %w", err)
	}
	moved := time.Now()

	// Reads run for as long as the reaper works, so that their latencies
	// are all taken under its load.
	pollCtx, cancelPoll := context.WithCancel(ctx)
	defer cancelPoll()
	reaped := make(chan struct{})
	var (
		deleted  int64
		deleting time.Duration
		pollErr  error
	)
	go func() {
		defer close(reaped)
		deleted, deleting, pollErr = awaitReaper(pollCtx, admin, before, int64(cfg.ttlDocs), moved, cfg.ttlWait)
	}()
	reaping, err := measureUntil(ctx, cfg.clients, reaped, findTTLDoc(coll, cfg.ttlDocs, false))
	cancelPoll()
	<-reaped
	if err != nil {
		return res, fmt.Errorf("findOne while the reaper deletes: %w", err)
	}
	if pollErr != nil {
		return res, pollErr
	}
	res.reaping, res.deleted, res.deleting = reaping, deleted, deleting
	res.complete = res.deleted >= int64(cfg.ttlDocs)
	return res, nil
}

// findTTLDoc looks up random documents of the TTL collection, which must
// be visible before the clock moves and, by the TTL contract, absent from
// the instant they expire, whether or not the reaper has deleted them yet.
func findTTLDoc(coll *mongo.Collection, docs int, visible bool) func(int) op {
	return func(client int) op {
		rng := clientRand(client)
		return func(ctx context.Context) error {
			id := rng.Int64N(int64(docs))
			err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err()
			switch {
			case visible && errors.Is(err, mongo.ErrNoDocuments):
				return fmt.Errorf("document %d not found before it expired", id)
			case !visible && err == nil:
				return fmt.Errorf("document %d found after it expired", id)
			case !visible && errors.Is(err, mongo.ErrNoDocuments):
				return nil
			}
			return err
		}
	}
}

// awaitReaper polls the server's deletion counter until want documents
// past before are gone or wait has passed since moved. It returns how many
// went and when it last saw the count change.
func awaitReaper(ctx context.Context, admin *mongo.Database, before, want int64, moved time.Time, wait time.Duration) (deleted int64, took time.Duration, err error) {
	tick := time.NewTicker(reaperPoll)
	defer tick.Stop()
	for {
		now, err := deletedDocuments(ctx, admin)
		if err != nil {
			return deleted, took, err
		}
		if now-before != deleted {
			deleted, took = now-before, time.Since(moved)
		}
		if deleted >= want || time.Since(moved) >= wait {
			return deleted, took, nil
		}
		select {
		case <-ctx.Done():
			return deleted, took, ctx.Err()
		case <-tick.C:
		}
	}
}

// deletedDocuments reads the reaper's running total of deleted documents
// from serverStatus.
func deletedDocuments(ctx context.Context, admin *mongo.Database) (int64, error) {
	raw, err := admin.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		return 0, fmt.Errorf("serverStatus: %w", err)
	}
	v, err := raw.LookupErr("metrics", "ttl", "deletedDocuments")
	if err != nil {
		return 0, fmt.Errorf("serverStatus reply has no metrics.ttl.deletedDocuments: %w", err)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		return 0, fmt.Errorf("serverStatus metrics.ttl.deletedDocuments is a %v, not a number", v.Type)
	}
	return n, nil
}
