package main

import (
	"math"
	"math/bits"
	"time"
)

// Bucket layout: values below 2^subBucketBits nanoseconds get a bucket each;
// above that, every power of two is split into halfBuckets equal buckets.
// A value's bucket is then its top subBucketBits bits, so a bucket is never
// wider than 1/halfBuckets of the values in it, whatever their magnitude.
const (
	subBucketBits = 8
	halfBuckets   = 1 << (subBucketBits - 1)
	bucketCount   = (64-subBucketBits)*halfBuckets + 2*halfBuckets
)

// histogram counts latencies with a relative error below 1/128 in fixed
// memory, so a run of any length costs the same to record and to summarize.
// It is not safe for concurrent use: each client records into its own and
// the results are merged afterwards.
type histogram struct {
	counts   [bucketCount]uint64
	total    uint64
	min, max time.Duration
}

func newHistogram() *histogram { return new(histogram) }

// record adds one observation. Negative durations count as zero.
func (h *histogram) record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(uint64(d))]++
	if h.total == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.total++
}

// merge adds every observation of o to h.
func (h *histogram) merge(o *histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.total += o.total
}

// count is the number of observations.
func (h *histogram) count() uint64 { return h.total }

// quantile returns the smallest recorded value v such that a fraction q of
// the observations are <= v, to within the bucket width. It reports the top
// of the bucket, like HDR histograms, so percentiles never understate.
func (h *histogram) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := max(uint64(math.Ceil(q*float64(h.total))), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := time.Duration(min(bucketHigh(i), uint64(math.MaxInt64)))
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// bucketOf returns the index of the bucket holding v.
func bucketOf(v uint64) int {
	shift := max(bits.Len64(v)-subBucketBits, 0)
	return shift*halfBuckets + int(v>>shift)
}

// bucketLow returns the smallest value in bucket i.
func bucketLow(i int) uint64 {
	shift, mantissa := bucketShape(i)
	return mantissa << shift
}

// bucketHigh returns the largest value in bucket i.
func bucketHigh(i int) uint64 {
	shift, mantissa := bucketShape(i)
	return (mantissa+1)<<shift - 1
}

func bucketShape(i int) (shift int, mantissa uint64) {
	if i < 2*halfBuckets {
		return 0, uint64(i)
	}
	shift = i/halfBuckets - 1
	return shift, uint64(i - shift*halfBuckets)
}
