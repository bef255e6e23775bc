package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The growth workload loads one collection of 1 KB documents with an
// indexed secondary field up to --growth-docs, into a --server-bin child
// whose oplog is on, and stops at checkpoints (100,000, every tenfold
// after, and the end) to measure the same single-document requests and
// take the server's measure: its memory, its data directory on disk, what
// dbStats says of the data, and the oplog. Issue 20 asks that at
// 10,000,000 documents, with the oplog full and so trimmed, each request
// stays within 1.5x of its figures at 100,000, and that memory stays
// bounded by the block cache.
const (
	growthColl = "growth"
	// growthDocSize is the encoded size of a loaded document.
	growthDocSize = 1024
	// growthFirst is the first checkpoint, the one the others are
	// compared with.
	growthFirst = 100_000
	// growthSegment is how many documents the load reports progress by.
	growthSegment = 250_000
	// growthLimit is the most a checkpoint's request may be slower than
	// at the first one (issue 20).
	growthLimit = 1.5
	// growthInsertBase is where the _ids of documents inserted while
	// measuring start, far above the loaded ones.
	growthInsertBase = int64(1) << 40
)

// growthKinds are the requests measured at every checkpoint, in order;
// ping comes first, the one the others are taken relative to.
var growthKinds = []string{"ping", "findone-id", "findone-key", "insert", "update", "oplog-head"}

// growthKindHelp says what each request is, for the report.
var growthKindHelp = map[string]string{
	"ping":        "ping round trip",
	"findone-id":  "findOne by _id, a random loaded document",
	"findone-key": "findOne by the indexed field k, a random loaded document",
	"insert":      "insertOne of a new 1 KB document",
	"update":      "updateOne by _id ($inc), a random loaded document",
	"oplog-head":  "findOne of local.oplog.rs in natural order: its oldest entry, behind every trimmed range",
}

// growthPoint is what one checkpoint measured.
type growthPoint struct {
	label  string // "100k", "1M", ...
	loaded int    // documents loaded so far
	// docs is the collection's count after the measurements, once the
	// documents the inserts added are deleted again.
	docs int64
	// load is the time the load up to here took since the previous
	// checkpoint; slowest the lowest rate of any segment of it.
	load        time.Duration
	loadDocs    int
	slowestLoad float64
	// settle is how long the server took to finish the load's
	// compactions before the requests were measured; settled is false
	// when it was still busy after growthSettleMax.
	settle  time.Duration
	settled bool
	// samples are each request's, all rounds merged; vsPing and
	// p50VsPing its ops/s and its p50 over those of the ping measured
	// right before it, one per round.
	samples           map[string]sample
	vsPing, p50VsPing map[string][]float64
	mem               procMem
	disk              diskUse
	stats             dbStatsFigures
	oplog             oplogFigures
	// cache is the block cache over the requests' measurement: the hits
	// and misses they made, and what it held at their end.
	cache blockCacheFigures
}

// growthRun is the growth workload's outcome, for the report.
type growthRun struct {
	// cacheMiB and oplogMiB are the server's --cache-size-mb and
	// --oplog-size-mb as --server-args gave them, or their defaults.
	cacheMiB, oplogMiB int64
	points             []growthPoint
	// restarted is the footprint after the child was restarted over the
	// same data directory, and restartTook how long that took; nil when
	// the restart was not reached.
	restarted   *growthPoint
	restartTook time.Duration
}

// growthCheckpoints are the document counts the workload stops at:
// growthFirst, every tenfold after it below n, and n.
func growthCheckpoints(n int) []int {
	var cps []int
	for c := growthFirst; c < n; c *= 10 {
		cps = append(cps, c)
	}
	return append(cps, n)
}

// countLabel writes n short: 100k, 10M, 12345.
func countLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// growthKey is document i's indexed field: a bijection of the 64-bit
// integers (splitmix64's finalizer), so that keys are unique and land all
// over the index rather than in _id order.
func growthKey(i int64) int64 {
	z := uint64(i)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64(z ^ (z >> 31))
}

func runGrowth(ctx context.Context, e *env) ([]result, error) {
	c := e.child
	if c == nil {
		return nil, errors.New("growth measures a child server's memory and data directory: give --server-bin")
	}
	run := &growthRun{
		cacheMiB: flagInt(e.cfg.serverArgs, "cache-size-mb", 256),
		oplogMiB: flagInt(e.cfg.serverArgs, "oplog-size-mb", 1024),
	}
	e.growth = run
	// The statistics of a large collection (dbStats reads every
	// document) take longer than the load clients' request timeout: they
	// get a client of their own without one.
	statsClient, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + c.addr + "/?directConnection=true"))
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer statsClient.Disconnect(context.Background())
	statsDB := statsClient.Database(e.db.Name())

	pads, err := newGrowthPads()
	if err != nil {
		return nil, err
	}
	coll := e.db.Collection(growthColl)
	if err := drop(ctx, coll); err != nil {
		return nil, err
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		return nil, fmt.Errorf("create index {k: 1}: %w", err)
	}
	// A first document tells whether the oplog is on: the point of the
	// workload is a full one.
	if _, err := coll.InsertOne(ctx, pads.doc(growthInsertBase)); err != nil {
		return nil, err
	}
	if err := oplogOn(ctx, e.db.Client()); err != nil {
		return nil, err
	}
	var inserted atomic.Int64
	var results []result
	loaded := 0
	for _, cp := range growthCheckpoints(e.cfg.growthDocs) {
		p := growthPoint{label: countLabel(cp), loadDocs: cp - loaded}
		began := time.Now()
		for loaded < cp {
			if err := ctx.Err(); err != nil {
				return results, err
			}
			to := min(cp, (loaded/growthSegment+1)*growthSegment)
			from := loaded
			segBegan := time.Now()
			err := bulkLoad(ctx, coll, to-from, e.cfg.clients, func(i int) bson.D { return pads.doc(int64(from + i)) })
			if err != nil {
				return results, fmt.Errorf("load: %w", err)
			}
			took := time.Since(segBegan)
			rate := float64(to-from) / took.Seconds()
			if p.slowestLoad == 0 || rate < p.slowestLoad {
				p.slowestLoad = rate
			}
			loaded = to
			mem, _ := readProcMem(c.pid())
			e.logf("growth: loaded %d documents (%.0f docs/s over the last %d; server RSS %s)", loaded, rate, to-from, mibText(mem.rss))
		}
		p.load, p.loaded = time.Since(began), cp
		if p.settle, p.settled, err = settle(ctx, e); err != nil {
			return results, fmt.Errorf("at %s: %w", p.label, err)
		}
		e.logf("growth: measuring at %s documents (the server settled for %v, quiet: %v)", p.label, p.settle.Round(time.Second), p.settled)
		cacheBefore, err := readBlockCache(ctx, statsClient)
		if err != nil {
			return results, fmt.Errorf("at %s: %w", p.label, err)
		}
		if err := p.measureRequests(ctx, e, coll, pads, &inserted); err != nil {
			return results, fmt.Errorf("at %s: %w", p.label, err)
		}
		if p.cache, err = readBlockCache(ctx, statsClient); err != nil {
			return results, fmt.Errorf("at %s: %w", p.label, err)
		}
		p.cache.hits -= cacheBefore.hits
		p.cache.misses -= cacheBefore.misses
		for _, kind := range growthKinds {
			res := result{name: "growth@" + p.label + "/" + kind, sample: p.samples[kind]}
			if kind != "ping" {
				res.ceiling = "growth@" + p.label + "/ping"
			}
			results = append(results, res)
		}
		// The inserts' documents go, so that the next checkpoint's count
		// is the loaded one and this one's figures are of it.
		if _, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: growthInsertBase}}}}); err != nil {
			return results, fmt.Errorf("delete the inserted documents: %w", err)
		}
		if err := p.takeMeasure(ctx, c, statsDB); err != nil {
			return results, fmt.Errorf("at %s: %w", p.label, err)
		}
		run.points = append(run.points, p)
		e.logf("growth: %s: RSS %s (peak %s), data dir %s, dbStats took %v", p.label, mibText(p.mem.rss), mibText(p.mem.hwm),
			mibText(p.disk.total()), p.stats.took.Round(time.Millisecond))
	}

	e.logf("growth: restarting the server over its data directory")
	began := time.Now()
	if err := c.restart(ctx); err != nil {
		return results, fmt.Errorf("restart: %w", err)
	}
	run.restartTook = time.Since(began)
	// The statistics client's pooled connection died with the old
	// process: its first command may fail once, and commands are not
	// retried.
	for try := 0; ; try++ {
		err := statsDB.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
		if err == nil {
			break
		}
		if try == 5 {
			return results, fmt.Errorf("ping after the restart: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	last := run.points[len(run.points)-1]
	after := growthPoint{label: last.label + " restarted", loaded: last.loaded}
	if err := after.takeMeasure(ctx, c, statsDB); err != nil {
		return results, fmt.Errorf("after the restart: %w", err)
	}
	run.restarted = &after
	return results, nil
}

// A server settles once it uses less than growthQuietCPU of CPU time in
// a growthQuietWindow, waiting at most growthSettleMax: right after a
// bulk load its compactions take most of its CPU for minutes, and the
// requests measured then would be measured against them, not against
// the size of the data.
const (
	growthQuietWindow = 5 * time.Second
	growthQuietCPU    = 500 * time.Millisecond // a tenth of a core
	growthSettleMax   = 15 * time.Minute
)

// settle waits until the server is quiet (see growthQuietCPU) and says
// how long it waited and whether it got quiet.
func settle(ctx context.Context, e *env) (time.Duration, bool, error) {
	began := time.Now()
	for time.Since(began) < growthSettleMax {
		before, err := e.cpuNow()
		if err != nil {
			return 0, false, err
		}
		select {
		case <-ctx.Done():
			return time.Since(began), false, ctx.Err()
		case <-time.After(growthQuietWindow):
		}
		after, err := e.cpuNow()
		if err != nil {
			return 0, false, err
		}
		if after-before < growthQuietCPU {
			return time.Since(began), true, nil
		}
	}
	return time.Since(began), false, nil
}

// growthPadBytes is the size of the random text documents take their
// padding from.
const growthPadBytes = 1 << 20

// growthPads pads the documents to growthDocSize with random printable
// text, so that they compress no more than real data does (a run of one
// letter shrinks to nothing, and the data set would fit in memory): each
// document's padding is its own window of one random text, picked by its
// key, so making it costs no random numbers.
type growthPads struct {
	text string
	n    int // padding bytes a document needs
}

func newGrowthPads() (*growthPads, error) {
	doc := growthDocOf(0, "")
	pad, err := paddingTo(doc[:len(doc)-1], growthDocSize) // all but the pad field
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(0x9e3779b97f4a7c15, 0x1e7e))
	b := make([]byte, growthPadBytes)
	for i := range b {
		b[i] = ' ' + byte(rng.IntN(95))
	}
	return &growthPads{text: string(b), n: len(pad)}, nil
}

// doc is the document of _id id.
func (g *growthPads) doc(id int64) bson.D {
	off := uint64(growthKey(id)) % uint64(len(g.text)-g.n)
	return growthDocOf(id, g.text[off:off+uint64(g.n)])
}

// growthDocOf is the document of _id id: its indexed key, a counter the
// updates increment, and pad.
func growthDocOf(id int64, pad string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "k", Value: growthKey(id)}, {Key: "n", Value: int32(0)}, {Key: "pad", Value: pad}}
}

// measureRequests measures every request of growthKinds but ping in
// --rounds rounds of --duration/rounds each, a ping measured right
// before each, so that each has a ratio to a ping taken under the same
// load of the machine.
func (p *growthPoint) measureRequests(ctx context.Context, e *env, coll *mongo.Collection, pads *growthPads, inserted *atomic.Int64) error {
	p.samples = make(map[string]sample)
	p.vsPing, p.p50VsPing = make(map[string][]float64), make(map[string][]float64)
	d := e.cfg.duration / time.Duration(e.cfg.rounds)
	for range e.cfg.rounds {
		for _, kind := range growthKinds[1:] {
			ping, err := e.measureFor(ctx, d, growthOp("ping", coll, p.loaded, pads, inserted))
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			s, err := e.measureFor(ctx, d, growthOp(kind, coll, p.loaded, pads, inserted))
			if err != nil {
				return fmt.Errorf("%s: %w", kind, err)
			}
			p.samples["ping"] = mergeSamples(p.samples["ping"], ping)
			p.samples[kind] = mergeSamples(p.samples[kind], s)
			p.vsPing[kind] = append(p.vsPing[kind], s.opsPerSec()/ping.opsPerSec())
			p.p50VsPing[kind] = append(p.p50VsPing[kind], float64(s.latency.quantile(0.5))/float64(ping.latency.quantile(0.5)))
		}
	}
	return nil
}

// growthOp is the request of kind against coll of loaded documents.
// inserted numbers the documents the inserts add, across checkpoints.
func growthOp(kind string, coll *mongo.Collection, loaded int, pads *growthPads, inserted *atomic.Int64) func(int) op {
	admin := coll.Database().Client().Database("admin")
	oplog := coll.Database().Client().Database("local").Collection("oplog.rs")
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	return func(client int) op {
		rng := clientRand(client)
		switch kind {
		case "ping":
			return func(ctx context.Context) error {
				return admin.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
			}
		case "findone-id", "findone-key":
			return func(ctx context.Context) error {
				id := rng.Int64N(int64(loaded))
				filter := bson.D{{Key: "_id", Value: id}}
				if kind == "findone-key" {
					filter = bson.D{{Key: "k", Value: growthKey(id)}}
				}
				err := coll.FindOne(ctx, filter).Err()
				if errors.Is(err, mongo.ErrNoDocuments) {
					return fmt.Errorf("loaded document %d not found by %v", id, filter)
				}
				return err
			}
		case "insert":
			return func(ctx context.Context) error {
				_, err := coll.InsertOne(ctx, pads.doc(growthInsertBase+inserted.Add(1)))
				return err
			}
		case "update":
			return func(ctx context.Context) error {
				id := rng.Int64N(int64(loaded))
				res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, inc)
				if err != nil {
					return err
				}
				if res.MatchedCount != 1 {
					return fmt.Errorf("update of loaded document %d matched %d documents", id, res.MatchedCount)
				}
				return nil
			}
		case "oplog-head":
			return func(ctx context.Context) error {
				err := oplog.FindOne(ctx, bson.D{}).Err()
				if errors.Is(err, mongo.ErrNoDocuments) {
					return errors.New("the oplog is empty")
				}
				return err
			}
		}
		panic("unknown growth request " + kind)
	}
}

// oplogOn checks that the server keeps an oplog: local.oplog.rs has an
// entry once something was written.
func oplogOn(ctx context.Context, client *mongo.Client) error {
	err := client.Database("local").Collection("oplog.rs").FindOne(ctx, bson.D{}).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return errors.New("the server keeps no oplog: start it with --server-args=--oplog (or --repl-set=NAME)")
	}
	return err
}

// blockCacheFigures are serverStatus's lethe.blockCache: the block
// cache's budget and bytes held, and its hits and misses; ok is false
// when the server has none.
type blockCacheFigures struct {
	ok                            bool
	maxBytes, bytes, hits, misses int64
}

// hitRatio is the share of block reads the cache served, or -1 if none.
func (c blockCacheFigures) hitRatio() float64 {
	if c.hits+c.misses <= 0 {
		return -1
	}
	return float64(c.hits) / float64(c.hits+c.misses)
}

// readBlockCache reads the server's block cache figures from serverStatus.
func readBlockCache(ctx context.Context, client *mongo.Client) (blockCacheFigures, error) {
	var status struct {
		Lethe struct {
			BlockCache *struct {
				MaxBytes int64 `bson:"maxBytes"`
				Bytes    int64 `bson:"bytes"`
				Hits     int64 `bson:"hits"`
				Misses   int64 `bson:"misses"`
			} `bson:"blockCache"`
		} `bson:"lethe"`
	}
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		return blockCacheFigures{}, fmt.Errorf("serverStatus: %w", err)
	}
	bc := status.Lethe.BlockCache
	if bc == nil {
		return blockCacheFigures{}, nil
	}
	return blockCacheFigures{ok: true, maxBytes: bc.MaxBytes, bytes: bc.Bytes, hits: bc.Hits, misses: bc.Misses}, nil
}

// takeMeasure fills p's memory, disk, dbStats and oplog figures.
func (p *growthPoint) takeMeasure(ctx context.Context, c *childServer, db *mongo.Database) error {
	var err error
	if p.mem, err = readProcMem(c.pid()); err != nil {
		return err
	}
	if p.disk, err = measureDir(c.dir); err != nil {
		return err
	}
	if p.stats, err = readDBStats(ctx, db); err != nil {
		return err
	}
	if p.oplog, err = readOplog(ctx, db.Client()); err != nil {
		return err
	}
	n, err := db.Collection(growthColl).EstimatedDocumentCount(ctx)
	p.docs = n
	return err
}

// procMem is a process's resident memory now and at its peak, in bytes.
type procMem struct{ rss, hwm int64 }

// readProcMem reads VmRSS and VmHWM of /proc/<pid>/status (Linux only).
func readProcMem(pid int) (procMem, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMem{}, fmt.Errorf("read the server's memory: %w", err)
	}
	return parseProcStatus(string(raw))
}

// parseProcStatus picks VmRSS and VmHWM out of a /proc/<pid>/status text,
// whose lines read "VmRSS:	  123456 kB".
func parseProcStatus(text string) (procMem, error) {
	var m procMem
	var found int
	for line := range strings.SplitSeq(text, "\n") {
		name, rest, ok := strings.Cut(line, ":")
		var into *int64
		switch name {
		case "VmRSS":
			into = &m.rss
		case "VmHWM":
			into = &m.hwm
		}
		if !ok || into == nil {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("malformed /proc status line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("malformed /proc status line %q: %w", line, err)
		}
		*into = kb << 10
		found++
	}
	if found != 2 {
		return m, errors.New("no VmRSS and VmHWM in /proc status")
	}
	return m, nil
}

// diskUse is a data directory's files by kind: their sizes in bytes, and
// the space they take on disk (du's figure, which the sizes of sparse or
// preallocated files do not give).
type diskUse struct {
	wal, sst, ballast, other int64 // *.log, *.sst, the disk guard's reserve, the rest
	allocated                int64
	// walFiles and walAllocated are the WAL's files and the space they
	// take: pebble preallocates each WAL file and keeps used ones for
	// reuse, so the WAL may take more than its size says.
	walFiles     int
	walAllocated int64
}

func (d diskUse) total() int64 { return d.wal + d.sst + d.ballast + d.other }

// measureDir sums the files under dir.
func measureDir(dir string) (diskUse, error) {
	var d diskUse
	err := filepath.WalkDir(dir, func(path string, ent fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed by a compaction or a WAL recycling meanwhile
			}
			return err
		}
		if !ent.Type().IsRegular() {
			return nil
		}
		info, err := ent.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		var allocated int64
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated = st.Blocks * 512
		}
		d.allocated += allocated
		switch name := ent.Name(); {
		case strings.HasSuffix(name, ".log"):
			d.wal += info.Size()
			d.walFiles++
			d.walAllocated += allocated
		case strings.HasSuffix(name, ".sst"):
			d.sst += info.Size()
		case name == "LETHE-BALLAST":
			d.ballast += info.Size()
		default:
			d.other += info.Size()
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("measure the data directory: %w", err)
	}
	return d, nil
}

// dbStatsFigures is what dbStats says of the tool's database, in bytes,
// and how long it took to say it.
type dbStatsFigures struct {
	objects, dataSize, storageSize, indexSize int64
	took                                      time.Duration
}

func readDBStats(ctx context.Context, db *mongo.Database) (dbStatsFigures, error) {
	began := time.Now()
	var st struct {
		Objects     int64   `bson:"objects"`
		DataSize    float64 `bson:"dataSize"`
		StorageSize float64 `bson:"storageSize"`
		IndexSize   float64 `bson:"indexSize"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "dbStats", Value: 1}}).Decode(&st); err != nil {
		return dbStatsFigures{}, fmt.Errorf("dbStats: %w", err)
	}
	return dbStatsFigures{objects: st.Objects, dataSize: int64(st.DataSize), storageSize: int64(st.StorageSize),
		indexSize: int64(st.IndexSize), took: time.Since(began)}, nil
}

// oplogFigures is what local.oplog.rs holds: its entries, their bytes
// (as BSON) and the timestamps of its oldest and newest.
type oplogFigures struct {
	entries, bytes  int64
	oldest, newest  bson.Timestamp
	oldestWallClock time.Time
}

func readOplog(ctx context.Context, client *mongo.Client) (oplogFigures, error) {
	var f oplogFigures
	oplog := client.Database("local").Collection("oplog.rs")
	cur, err := oplog.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{
		{Key: "_id", Value: nil},
		{Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
		{Key: "bytes", Value: bson.D{{Key: "$sum", Value: bson.D{{Key: "$bsonSize", Value: "$$ROOT"}}}}},
	}}}})
	if err != nil {
		return f, fmt.Errorf("size the oplog: %w", err)
	}
	var sums []struct {
		N     int64 `bson:"n"`
		Bytes int64 `bson:"bytes"`
	}
	if err := cur.All(ctx, &sums); err != nil {
		return f, fmt.Errorf("size the oplog: %w", err)
	}
	if len(sums) == 1 {
		f.entries, f.bytes = sums[0].N, sums[0].Bytes
	}
	for _, end := range []int{1, -1} {
		var entry struct {
			TS   bson.Timestamp `bson:"ts"`
			Wall time.Time      `bson:"wall"`
		}
		err := oplog.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "$natural", Value: end}})).Decode(&entry)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return f, fmt.Errorf("read the oplog's ends: %w", err)
		}
		if end == 1 {
			f.oldest, f.oldestWallClock = entry.TS, entry.Wall
		} else {
			f.newest = entry.TS
		}
	}
	return f, nil
}

// flagInt is the value of lethe flag name in args (-name=N, --name=N,
// -name N or --name N; the last one given), or def.
func flagInt(args []string, name string, def int64) int64 {
	v := def
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		var text string
		switch {
		case strings.HasPrefix(a, name+"="):
			text = strings.TrimPrefix(a, name+"=")
		case a == name && i+1 < len(args):
			text = args[i+1]
		default:
			continue
		}
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			v = n
		}
	}
	return v
}

// mibText writes a byte count in MiB.
func mibText(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
