package query

import "testing"

// {$sampleRate: r} keeps about r of the documents, drawing for each.
func TestSampleRateKeepsAboutItsRate(t *testing.T) {
	f := mustCompile(t, `{"$sampleRate": 0.3}`)
	doc := raw(t, `{"a": 1}`)
	n := 0
	for range 10000 {
		if f.Match(doc) {
			n++
		}
	}
	// The standard deviation is about 46: ten of them either way.
	if n < 2540 || n > 3460 {
		t.Fatalf("%d of 10000 documents matched a rate of 0.3", n)
	}
}
