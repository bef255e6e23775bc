package usage

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/record"
)

// Counters count how one collection is used. The zero value is ready; it
// must not be copied once used.
type Counters struct {
	latency   [numLatencyKinds]latencyHistogram
	collScans atomic.Int64
	// indexes holds an *indexAccess per index ID that has been built,
	// used or reported; the _id index is ID 0.
	indexes sync.Map
	// Opened is when the collection was opened (created, or loaded when
	// the store opened): the start of the counts of the indexes it had.
	// Set before the collection is shared.
	Opened time.Time
}

// LatencyKind is what latencyStats files an operation's latency under.
type LatencyKind int

// The kinds of latencyStats, as MongoDB files commands: reads (find,
// getMore, aggregate, count, distinct), writes (insert, update, delete,
// findAndModify), other commands, and transactions (which Lethe has not).
const (
	LatencyReads LatencyKind = iota
	LatencyWrites
	LatencyCommands
	LatencyTransactions
	numLatencyKinds
)

var latencyNames = [numLatencyKinds]string{"reads", "writes", "commands", "transactions"}

// numLatencyBuckets is the number of buckets of MongoDB's latency
// histograms: powers of two up to 2^10 µs, then two buckets per power of
// two up to 2^21 µs, then powers of two up to 2^40 µs.
const numLatencyBuckets = 51

// latencyHistogram is one kind's latencies, in microseconds.
type latencyHistogram struct {
	buckets [numLatencyBuckets]atomic.Int64
	sum     atomic.Int64
	ops     atomic.Int64
}

// latencyBucket is the bucket of a latency of micros µs.
func latencyBucket(micros uint64) int {
	if micros == 0 {
		return 0
	}
	log2 := bits.Len64(micros) - 1
	switch {
	case log2 < 11:
		return log2
	case log2 < 21:
		b := 11 + 2*(log2-11)
		if micros >= 3<<(log2-1) {
			b++
		}
		return b
	}
	return min(log2+10, numLatencyBuckets-1)
}

// latencyLowerBound is the least latency, in µs, of bucket i.
func latencyLowerBound(i int) int64 {
	switch {
	case i == 0:
		return 0
	case i <= 10:
		return 1 << i
	case i <= 30:
		log2 := 11 + (i-11)/2
		if (i-11)%2 == 1 {
			return 3 << (log2 - 1)
		}
		return 1 << log2
	}
	return 1 << (i - 10)
}

func (h *latencyHistogram) add(micros int64) {
	h.buckets[latencyBucket(uint64(max(micros, 0)))].Add(1)
	h.sum.Add(micros)
	h.ops.Add(1)
}

// doc is the histogram as latencyStats shows it: the non-empty buckets by
// their lower bounds when asked, the total latency and the operations.
func (h *latencyHistogram) doc(histograms bool) bson.D {
	var d bson.D
	if histograms {
		arr := bson.A{}
		for i := range h.buckets {
			if n := h.buckets[i].Load(); n > 0 {
				arr = append(arr, bson.D{{Key: "micros", Value: latencyLowerBound(i)}, {Key: "count", Value: n}})
			}
		}
		d = append(d, bson.E{Key: "histogram", Value: arr})
	}
	return append(d, bson.E{Key: "latency", Value: h.sum.Load()}, bson.E{Key: "ops", Value: h.ops.Load()})
}

// LatencyDoc is latencyStats.
func (u *Counters) LatencyDoc(histograms bool) bson.D {
	d := make(bson.D, 0, numLatencyKinds)
	for k := range u.latency {
		d = append(d, bson.E{Key: latencyNames[k], Value: u.latency[k].doc(histograms)})
	}
	return d
}

// IndexAccess counts the operations that used one index since a time.
type IndexAccess struct {
	Ops   atomic.Int64
	Since time.Time
}

// Access returns the counter of index id. An index built since the
// collection was opened has had one since it was built; one it had when
// it was opened counts from then.
func (u *Counters) Access(id uint64, clock clock.Clock) *IndexAccess {
	if a, ok := u.indexes.Load(id); ok {
		return a.(*IndexAccess)
	}
	since := u.Opened
	if since.IsZero() {
		since = clock.Now()
	}
	a, _ := u.indexes.LoadOrStore(id, &IndexAccess{Since: since})
	return a.(*IndexAccess)
}

// Built starts the counts of new indexes.
func (u *Counters) Built(indexes []record.IndexMeta, clock clock.Clock) {
	now := clock.Now()
	for _, im := range indexes {
		u.indexes.Store(im.ID, &IndexAccess{Since: now})
	}
}

// CountCollScan counts an operation that read the collection by a
// collection scan.
func (u *Counters) CountCollScan() { u.collScans.Add(1) }

// CollScans is the number of collection scans counted.
func (u *Counters) CollScans() int64 { return u.collScans.Load() }

// AddLatency files the latency of one command under kind; an unknown kind
// records nothing.
func (u *Counters) AddLatency(kind LatencyKind, d time.Duration) {
	if kind < 0 || kind >= numLatencyKinds {
		return
	}
	u.latency[kind].add(d.Microseconds())
}
