package spill

import (
	"bytes"
	"slices"
	"testing"
)

func TestTopIsAStableSortsPrefix(t *testing.T) {
	// With many ties (byFirstByte sees 16 values), the first k are those
	// a stable sort of everything puts first.
	recs := records(2000, 9)
	all := slices.Clone(recs)
	slices.SortStableFunc(all, byFirstByte)
	for _, k := range []int{1, 16, 300, 1999, 2000, 5000} {
		top := NewTop(k, byFirstByte)
		for _, r := range recs {
			if top.Offer(r) {
				top.Keep(slices.Clone(r))
			}
		}
		var held int64
		want := all[:min(k, len(all))]
		for _, r := range want {
			held += int64(len(r)) + RecordOverhead
		}
		if top.Held() != held {
			t.Errorf("k=%d: holds %d bytes, want %d", k, top.Held(), held)
		}
		if got := top.Sorted(); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("k=%d: the first differ from a stable sort's", k)
		}
		if top.Held() != 0 {
			t.Errorf("k=%d: holds %d bytes after Sorted", k, top.Held())
		}
	}
}
