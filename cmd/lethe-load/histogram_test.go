package main

import (
	"math"
	"testing"
	"time"
)

// maxRelErr is the largest relative error the bucket layout allows.
const maxRelErr = 1.0 / halfBuckets

func TestHistogramQuantile(t *testing.T) {
	tests := []struct {
		name   string
		values []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"single p50", []time.Duration{5 * time.Millisecond}, 0.5, 5 * time.Millisecond},
		{"single p99", []time.Duration{5 * time.Millisecond}, 0.99, 5 * time.Millisecond},
		{"single p0", []time.Duration{5 * time.Millisecond}, 0, 5 * time.Millisecond},
		{"small exact p50", series(1, 100, 1), 0.5, 50},
		{"small exact p99", series(1, 100, 1), 0.99, 99},
		{"small exact p100", series(1, 100, 1), 1, 100},
		{"micros p50", series(1, 1000, time.Microsecond), 0.5, 500 * time.Microsecond},
		{"micros p99", series(1, 1000, time.Microsecond), 0.99, 990 * time.Microsecond},
		{"micros p99.9", series(1, 1000, time.Microsecond), 0.999, 999 * time.Microsecond},
		{"tail hidden at p99", bimodal(990, time.Millisecond, 10, 100*time.Millisecond), 0.99, time.Millisecond},
		{"tail seen at p99.9", bimodal(990, time.Millisecond, 10, 100*time.Millisecond), 0.999, 100 * time.Millisecond},
		{"seconds p50", series(1, 9, time.Second), 0.5, 5 * time.Second},
		{"negative counts as zero", []time.Duration{-time.Second}, 0.5, 0},
		{"q above one clamps", series(1, 10, time.Millisecond), 1.5, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistogram()
			for _, v := range tt.values {
				h.record(v)
			}
			got := h.quantile(tt.q)
			if !closeEnough(got, tt.want) {
				t.Errorf("quantile(%v) = %v, want %v (within %.2f%%)", tt.q, got, tt.want, 100*maxRelErr)
			}
		})
	}
}

func TestHistogramMerge(t *testing.T) {
	whole, a, b := newHistogram(), newHistogram(), newHistogram()
	for i, v := range series(1, 5000, 7*time.Microsecond) {
		whole.record(v)
		if i%3 == 0 {
			a.record(v)
		} else {
			b.record(v)
		}
	}
	merged := newHistogram()
	merged.merge(a)
	merged.merge(b)
	merged.merge(newHistogram())
	if merged.count() != whole.count() {
		t.Fatalf("merged count = %d, want %d", merged.count(), whole.count())
	}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		if got, want := merged.quantile(q), whole.quantile(q); got != want {
			t.Errorf("merged quantile(%v) = %v, want %v", q, got, want)
		}
	}
}

func TestBucketsTileTheRange(t *testing.T) {
	for i := 0; i+1 < bucketCount; i++ {
		if bucketHigh(i)+1 != bucketLow(i+1) {
			t.Fatalf("bucket %d ends at %d but bucket %d starts at %d", i, bucketHigh(i), i+1, bucketLow(i+1))
		}
	}
	if got := bucketOf(math.MaxUint64); got != bucketCount-1 {
		t.Errorf("bucketOf(MaxUint64) = %d, want the last bucket %d", got, bucketCount-1)
	}
	for v := uint64(1); v < math.MaxUint64/3; v = v*3 + 1 {
		i := bucketOf(v)
		if v < bucketLow(i) || v > bucketHigh(i) {
			t.Errorf("value %d in bucket %d [%d, %d]", v, i, bucketLow(i), bucketHigh(i))
		}
		if width := bucketHigh(i) - bucketLow(i) + 1; float64(width) > float64(bucketLow(i))*maxRelErr && width > 1 {
			t.Errorf("bucket %d is %d wide for values from %d", i, width, bucketLow(i))
		}
	}
}

// series returns from*unit, (from+1)*unit, ..., to*unit.
func series(from, to int, unit time.Duration) []time.Duration {
	var s []time.Duration
	for i := from; i <= to; i++ {
		s = append(s, time.Duration(i)*unit)
	}
	return s
}

func bimodal(n1 int, v1 time.Duration, n2 int, v2 time.Duration) []time.Duration {
	var s []time.Duration
	for range n1 {
		s = append(s, v1)
	}
	for range n2 {
		s = append(s, v2)
	}
	return s
}

func closeEnough(got, want time.Duration) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(float64(got-want))/float64(want) <= maxRelErr
}
