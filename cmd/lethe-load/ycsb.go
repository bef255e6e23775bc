package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The YCSB mixes run YCSB's core workloads A, B, C, E and F (Cooper et
// al., SoCC 2010, and YCSB's workloads/workload[abcef] files) through the
// Go driver, shaped as YCSB's MongoDB binding sends them, so that Lethe
// can be set beside published YCSB results and beside itself over time.
// Workload D (read latest) is left out: its key chooser follows the
// inserts, which a mix measured for a fixed time rather than a fixed
// count of operations would have to bound differently from YCSB.

// The records: YCSB's defaults of ten fields of 100 bytes, 1 KB a record.
const (
	ycsbColl       = "usertable"
	ycsbFields     = 10
	ycsbFieldBytes = 100
	// ycsbMaxScan is YCSB's maxscanlength: a scan reads a uniformly
	// drawn 1 to 100 records.
	ycsbMaxScan = 100
)

// The kinds of operation of the mixes, each reported on its own.
const (
	kindRead = iota
	kindUpdate
	kindScan
	kindInsert
	kindRMW // read-modify-write: a read, then an update of the record read
	kindCount
)

var kindNames = [kindCount]string{"read", "update", "scan", "insert", "rmw"}

// ycsbFieldNames are field0 to field9, made once.
var ycsbFieldNames = func() (names [ycsbFields]string) {
	for i := range names {
		names[i] = fmt.Sprintf("field%d", i)
	}
	return names
}()

// A ycsbMix is one of YCSB's core workloads: the share of each kind of
// operation, as its proportions in YCSB's workload files.
type ycsbMix struct {
	name   string
	shares [kindCount]float64
}

var ycsbMixes = []ycsbMix{
	{"ycsb-a", [kindCount]float64{kindRead: 0.5, kindUpdate: 0.5}},   // update heavy
	{"ycsb-b", [kindCount]float64{kindRead: 0.95, kindUpdate: 0.05}}, // read mostly
	{"ycsb-c", [kindCount]float64{kindRead: 1}},                      // read only
	{"ycsb-e", [kindCount]float64{kindScan: 0.95, kindInsert: 0.05}}, // short ranges
	{"ycsb-f", [kindCount]float64{kindRead: 0.5, kindRMW: 0.5}},      // read-modify-write
}

// pick turns a uniform draw in [0, 1) into a kind of operation.
func (m ycsbMix) pick(u float64) int {
	last := 0
	for k, share := range m.shares {
		if share == 0 {
			continue
		}
		if u < share {
			return k
		}
		u -= share
		last = k
	}
	return last // rounding of the shares' sum
}

func ycsbWorkloads() []workload {
	var ws []workload
	for _, m := range ycsbMixes {
		ws = append(ws, workload{name: m.name, run: func(ctx context.Context, e *env) ([]result, error) {
			return runYCSB(ctx, e, m)
		}})
	}
	return ws
}

// ycsbTable is the loaded usertable that the mixes of a run share.
type ycsbTable struct {
	coll    *mongo.Collection
	records uint64 // loaded; the key chooser draws among these
	chooser keyChooser
	// inserted counts the records ycsb-e added after the load, which take
	// the record numbers from records on, as YCSB's insert sequence does.
	inserted atomic.Uint64
}

// runYCSB loads the table if no mix of the run has, then measures mix m.
// The first mix also reports the load, as ycsb-load: YCSB's load phase,
// an insertOne per record from every client.
func runYCSB(ctx context.Context, e *env, m ycsbMix) ([]result, error) {
	var results []result
	if e.ycsb == nil {
		t, load, err := loadYCSB(ctx, e)
		if err != nil {
			return nil, err
		}
		e.ycsb = t
		results = append(results, result{name: "ycsb-load", sample: load, ceiling: "ping"})
	}
	t := e.ycsb
	total, byKind, err := e.measureKinds(ctx, e.cfg.duration, kindCount, func(client int) kindOp {
		return t.mixOp(m, clientRand(client))
	})
	if err != nil {
		return nil, err
	}
	results = append(results, result{name: m.name, sample: total, ceiling: "ping"})
	for k, s := range byKind {
		if m.shares[k] > 0 {
			results = append(results, result{name: m.name + "/" + kindNames[k], sample: s})
		}
	}
	return results, nil
}

// loadYCSB drops the usertable and inserts --ycsb-records records into it.
func loadYCSB(ctx context.Context, e *env) (*ycsbTable, sample, error) {
	coll := e.db.Collection(ycsbColl)
	if err := drop(ctx, coll); err != nil {
		return nil, sample{}, err
	}
	n := uint64(e.cfg.ycsbRecords)
	t := &ycsbTable{coll: coll, records: n, chooser: uniformKeys{n: n}}
	if e.cfg.ycsbDist == "zipfian" {
		t.chooser = newScrambledZipfian(n)
	}
	e.logf("ycsb: loading %d records of %d fields", n, ycsbFields)
	var next atomic.Uint64
	load, _, err := e.measureKinds(ctx, 0, 1, func(client int) kindOp {
		rng := clientRand(client)
		return func(ctx context.Context) (int, error) {
			i := next.Add(1) - 1
			if i >= n {
				return noMoreOps, nil
			}
			if _, err := coll.InsertOne(ctx, ycsbRecord(i, rng)); err != nil {
				return 0, fmt.Errorf("load record %d: %w", i, err)
			}
			return 0, nil
		}
	})
	if err != nil {
		return nil, sample{}, err
	}
	return t, load, nil
}

// ycsbRecord is record number n with fresh random field values.
func ycsbRecord(n uint64, rng *rand.Rand) bson.D {
	doc := make(bson.D, 0, 1+ycsbFields)
	doc = append(doc, bson.E{Key: "_id", Value: ycsbKey(n)})
	for _, f := range ycsbFieldNames {
		doc = append(doc, bson.E{Key: f, Value: ycsbValue(rng)})
	}
	return doc
}

// ycsbValue is a field's value: ycsbFieldBytes random printable bytes,
// fresh for each write as YCSB's RandomByteIterator makes them, so that
// nothing compresses them.
func ycsbValue(rng *rand.Rand) string {
	var b [ycsbFieldBytes]byte
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, len(b)); j++ {
			b[j] = ' ' + byte(v%95)
			v >>= 8
		}
	}
	return string(b[:])
}

// mixOp is one client's loop body of mix m: each call draws a kind of
// operation by the mix's shares and a record by the key chooser.
func (t *ycsbTable) mixOp(m ycsbMix, rng *rand.Rand) kindOp {
	return func(ctx context.Context) (int, error) {
		kind := m.pick(rng.Float64())
		var err error
		switch kind {
		case kindRead:
			err = t.read(ctx, t.chooser.next(rng))
		case kindUpdate:
			err = t.update(ctx, t.chooser.next(rng), rng)
		case kindScan:
			err = t.scan(ctx, t.chooser.next(rng), 1+rng.IntN(ycsbMaxScan))
		case kindInsert:
			n := t.records + t.inserted.Add(1) - 1
			if _, err = t.coll.InsertOne(ctx, ycsbRecord(n, rng)); err != nil {
				err = fmt.Errorf("insert record %d: %w", n, err)
			}
		case kindRMW:
			// YCSB's read-modify-write reads the whole record, then
			// writes one field, and times the two together.
			n := t.chooser.next(rng)
			if err = t.read(ctx, n); err == nil {
				err = t.update(ctx, n, rng)
			}
		}
		return kind, err
	}
}

// read reads record n whole, as YCSB's MongoDB binding does with its
// default readallfields.
func (t *ycsbTable) read(ctx context.Context, n uint64) error {
	var doc bson.Raw
	err := t.coll.FindOne(ctx, bson.D{{Key: "_id", Value: ycsbKey(n)}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("read: loaded record %d not found", n)
	}
	return err
}

// update sets one random field of record n, as YCSB does with its default
// writeallfields=false.
func (t *ycsbTable) update(ctx context.Context, n uint64, rng *rand.Rand) error {
	set := bson.D{{Key: "$set", Value: bson.D{{Key: ycsbFieldNames[rng.IntN(ycsbFields)], Value: ycsbValue(rng)}}}}
	res, err := t.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: ycsbKey(n)}}, set)
	if err != nil {
		return err
	}
	if res.MatchedCount != 1 {
		return fmt.Errorf("update of loaded record %d matched %d records", n, res.MatchedCount)
	}
	return nil
}

// scan reads up to count records in key order from record n's key on, as
// YCSB's MongoDB binding does: a find of _id >= key sorted by _id.
func (t *ycsbTable) scan(ctx context.Context, n uint64, count int) error {
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: ycsbKey(n)}}}}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(count))
	cur, err := t.coll.Find(ctx, filter, opts)
	if err != nil {
		return err
	}
	got := 0
	for cur.Next(ctx) {
		got++
	}
	if err := errors.Join(cur.Err(), cur.Close(ctx)); err != nil {
		return err
	}
	// The start key is a loaded record's, so the scan finds at least it.
	if got < 1 || got > count {
		return fmt.Errorf("scan of %d records from record %d returned %d", count, n, got)
	}
	return nil
}
