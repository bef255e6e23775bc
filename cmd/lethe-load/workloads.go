package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// dbName is the database the tool works in; it drops only its own
// collections there, so pointing --uri at a shared server is safe.
const dbName = "lethe_load"

// findBatch is how many documents a range or secondary-field find returns.
const findBatch = 100

// result is one measured workload: its numbers and what they are judged
// against.
type result struct {
	name   string
	sample sample
	// ceiling names the workload whose throughput bounds this one's: the
	// cost of the same round trip or the same durable write without the
	// document layer. Empty when there is none.
	ceiling string
	// target is the least share of the ceiling's throughput this workload
	// should reach; 0 when there is no target.
	target float64
}

// workload is one kind of load, selected by name with --workloads.
type workload struct {
	name  string
	basic bool // run by default
	// ownServers: the workload starts the servers it compares, and so
	// cannot measure a --uri server.
	ownServers bool
	// fromBin: an ownServers workload that starts its server from
	// --server-bin when given one, and so can measure each build of
	// --compare.
	fromBin bool
	// named: run only when named, not with "all" (it takes long and
	// needs flags of its own).
	named bool
	run   func(ctx context.Context, e *env) ([]result, error)
}

func allWorkloads() []workload {
	return append([]workload{
		{name: "ping", basic: true, run: runPing},
		{name: "pebble-sync", basic: true, run: runPebbleSync},
		{name: "insert", basic: true, run: runInsert},
		{name: "oplog-cost", ownServers: true, run: runOplogCost},
		{name: "oplog-full", ownServers: true, run: runOplogFull},
		{name: "retry-cost", ownServers: true, run: runRetryCost},
		{name: "txn", ownServers: true, fromBin: true, run: runTxn},
		{name: "findone", basic: true, run: runFindOne},
		{name: "update", basic: true, run: runUpdate},
		{name: "find100", basic: true, run: runFind100},
		{name: "index", run: runIndex},
		{name: "text", run: runText},
		{name: "agg-group", run: runAggGroup},
		{name: "agg-lookup", run: runAggLookup},
		{name: "collated-sort", run: runCollatedSort},
		{name: "changestream", ownServers: true, run: runChangeStream},
		{name: "auth-connect", ownServers: true, run: runAuthConnect},
		{name: "auth-failures", ownServers: true, run: runAuthFailures},
		{name: "auth-overhead", ownServers: true, run: runAuthOverhead},
		{name: "tls", ownServers: true, run: runTLS},
		{name: "growth", named: true, run: runGrowth},
		{name: "geo-near", named: true, run: runGeoNear},
	}, ycsbWorkloads()...)
}

// env is what the workloads of one run share.
type env struct {
	cfg      config
	db       *mongo.Database
	progress io.Writer
	// preloaded is set once the docs collection holds cfg.docs documents.
	preloaded bool
	// cpu reads the server's CPU time, for the workloads that measure it
	// (through e.measure); nil read when the server's is unknown (--uri
	// without --server-pid).
	cpu cpuClock
	// child is the --server-bin process measured, nil for other servers.
	child *childServer
	// growth is the growth workload's outcome, once it ran.
	growth *growthRun
	// ycsb is the YCSB table, once loaded.
	ycsb *ycsbTable
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.progress, format+"\n", args...)
}

// clientRand gives each client its own random source. Seeding by client
// number makes every run ask for the same keys.
func clientRand(client int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(client)+1, 0x1e7e))
}

func runPing(ctx context.Context, e *env) ([]result, error) {
	admin := e.db.Client().Database("admin")
	ping := bson.D{{Key: "ping", Value: 1}}
	s, err := e.measure(ctx, func(int) op {
		return func(ctx context.Context) error {
			return admin.RunCommand(ctx, ping).Err()
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "ping", sample: s}}, nil
}

func runInsert(ctx context.Context, e *env) ([]result, error) {
	s, err := measureInsert(ctx, e, e.db.Collection("insert"))
	if err != nil {
		return nil, err
	}
	return []result{{name: "insert", sample: s, ceiling: "pebble-sync", target: 0.5}}, nil
}

func measureInsert(ctx context.Context, e *env, coll *mongo.Collection) (sample, error) {
	if err := drop(ctx, coll); err != nil {
		return sample{}, err
	}
	newOp, err := insertOp(coll)
	if err != nil {
		return sample{}, err
	}
	return e.measure(ctx, newOp)
}

// insertOp inserts a fresh padded document per call.
func insertOp(coll *mongo.Collection) (func(int) op, error) {
	pad, err := padding(bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "n", Value: int32(0)}})
	if err != nil {
		return nil, err
	}
	return func(int) op {
		return func(ctx context.Context) error {
			doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}}
			_, err := coll.InsertOne(ctx, doc)
			return err
		}
	}, nil
}

func runFindOne(ctx context.Context, e *env) ([]result, error) {
	coll, err := e.preload(ctx)
	if err != nil {
		return nil, err
	}
	s, err := e.measure(ctx, findOneOp(coll, e.cfg.docs))
	if err != nil {
		return nil, err
	}
	return []result{{name: "findone", sample: s, ceiling: "ping", target: 0.6}}, nil
}

// findOneOp finds a random one of the docs preloaded documents by _id.
func findOneOp(coll *mongo.Collection, docs int) func(int) op {
	return func(client int) op {
		rng := clientRand(client)
		return func(ctx context.Context) error {
			id := rng.Int64N(int64(docs))
			err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err()
			if errors.Is(err, mongo.ErrNoDocuments) {
				return fmt.Errorf("preloaded document %d not found", id)
			}
			return err
		}
	}
}

func runUpdate(ctx context.Context, e *env) ([]result, error) {
	coll, err := e.preload(ctx)
	if err != nil {
		return nil, err
	}
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	s, err := e.measure(ctx, func(client int) op {
		rng := clientRand(client)
		return func(ctx context.Context) error {
			id := rng.Int64N(int64(e.cfg.docs))
			res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, inc)
			if err != nil {
				return err
			}
			if res.MatchedCount != 1 {
				return fmt.Errorf("update of preloaded document %d matched %d documents", id, res.MatchedCount)
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "update", sample: s, ceiling: "pebble-sync", target: 0.5}}, nil
}

func runFind100(ctx context.Context, e *env) ([]result, error) {
	coll, err := e.preload(ctx)
	if err != nil {
		return nil, err
	}
	docs := int64(e.cfg.docs)
	want := min(findBatch, docs)
	s, err := e.measure(ctx, func(client int) op {
		rng := clientRand(client)
		return func(ctx context.Context) error {
			from := rng.Int64N(max(docs-findBatch, 0) + 1)
			filter := bson.D{{Key: "_id", Value: bson.D{
				{Key: "$gte", Value: from},
				{Key: "$lt", Value: from + findBatch},
			}}}
			return drain(ctx, coll, filter, options.Find().SetLimit(findBatch), want)
		}
	})
	if err != nil {
		return nil, err
	}
	return []result{{name: "find100", sample: s, ceiling: "ping"}}, nil
}

// preload fills the docs collection with cfg.docs documents whose _id runs
// from 0, once per run, and returns it.
func (e *env) preload(ctx context.Context) (*mongo.Collection, error) {
	coll := e.db.Collection("docs")
	if e.preloaded {
		return coll, nil
	}
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	pad, err := padding(bson.D{{Key: "_id", Value: int64(0)}, {Key: "n", Value: int32(0)}})
	if err != nil {
		return nil, err
	}
	e.logf("preloading %d documents", e.cfg.docs)
	err = bulkLoad(ctx, coll, e.cfg.docs, e.cfg.clients, func(i int) bson.D {
		return bson.D{{Key: "_id", Value: int64(i)}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}}
	})
	if err != nil {
		return nil, fmt.Errorf("preload: %w", err)
	}
	e.preloaded = true
	return coll, nil
}

// drain runs a find, reads every document of its cursor and checks that
// there were want of them.
func drain(ctx context.Context, coll *mongo.Collection, filter bson.D, opts *options.FindOptionsBuilder, want int64) error {
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return err
	}
	var n int64
	for cur.Next(ctx) {
		n++
	}
	err = errors.Join(cur.Err(), cur.Close(ctx))
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("find %v returned %d documents, want %d", filter, n, want)
	}
	return nil
}
