package usage

import "testing"

// MongoDB's latency histogram buckets, by their lower bounds in µs
// (operation_latency_histogram.cpp): the first, the last power of two
// before the split buckets, the split ones and the last.
func TestLatencyBuckets(t *testing.T) {
	for _, c := range []struct {
		micros uint64
		bucket int
		lower  int64
	}{
		{0, 0, 0}, {1, 0, 0}, {2, 1, 2}, {3, 1, 2}, {1023, 9, 512}, {1024, 10, 1024},
		{2047, 10, 1024}, {2048, 11, 2048}, {3071, 11, 2048}, {3072, 12, 3072}, {4096, 13, 4096},
		{1572864, 30, 1572864}, {2097151, 30, 1572864}, {2097152, 31, 2097152}, {4194304, 32, 4194304},
		{1 << 40, 50, 1 << 40}, {1 << 62, 50, 1 << 40},
	} {
		b := latencyBucket(c.micros)
		if b != c.bucket || latencyLowerBound(b) != c.lower {
			t.Errorf("%d µs: bucket %d (from %d), want %d (from %d)", c.micros, b, latencyLowerBound(b), c.bucket, c.lower)
		}
	}
	for i := 0; i < numLatencyBuckets; i++ {
		if got := latencyBucket(uint64(latencyLowerBound(i))); i > 0 && got != i {
			t.Errorf("lower bound of bucket %d falls in %d", i, got)
		}
	}
}
