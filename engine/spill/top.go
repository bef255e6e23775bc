package spill

import (
	"cmp"
	"container/heap"
	"slices"
)

// Top keeps the first k of the records it is offered in the order of a
// comparison, as a sort under a limit needs: k records in memory however
// many are offered. Of records that compare equal, the earlier offered
// comes first, as in a stable sort of them all.
type Top struct {
	k    int
	h    topHeap
	seq  int64
	held int64
}

// topItem is a record kept and when it was offered.
type topItem struct {
	rec []byte
	seq int64
}

// topHeap has the last of the records kept on top.
type topHeap struct {
	items []topItem
	cmp   func(a, b []byte) int
}

// before reports whether a comes before b.
func (h *topHeap) before(a, b topItem) bool {
	c := h.cmp(a.rec, b.rec)
	return c < 0 || c == 0 && a.seq < b.seq
}

func (h *topHeap) Len() int           { return len(h.items) }
func (h *topHeap) Less(i, j int) bool { return h.before(h.items[j], h.items[i]) }
func (h *topHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *topHeap) Push(x any)         { h.items = append(h.items, x.(topItem)) }
func (h *topHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items[len(h.items)-1] = topItem{}
	h.items = h.items[:len(h.items)-1]
	return x
}

// NewTop returns a Top of k records, k > 0, in the order of cmp.
func NewTop(k int, cmp func(a, b []byte) int) *Top {
	return &Top{k: k, h: topHeap{cmp: cmp}}
}

// Offer counts rec as offered and reports whether it is among the first
// k so far; if so the caller must Keep it (or a copy) before the next
// Offer.
func (t *Top) Offer(rec []byte) bool {
	it := topItem{rec: rec, seq: t.seq}
	t.seq++
	return t.h.Len() < t.k || t.h.before(it, t.h.items[0])
}

// Keep keeps rec, the record of the last Offer that reported true, which
// the Top may hold until Take or Sorted; the last of the k records kept
// so far makes room for it.
func (t *Top) Keep(rec []byte) {
	if t.h.Len() == t.k {
		t.held -= int64(len(t.h.items[0].rec)) + RecordOverhead
		heap.Pop(&t.h)
	}
	heap.Push(&t.h, topItem{rec: rec, seq: t.seq - 1})
	t.held += int64(len(rec)) + RecordOverhead
}

// Held is the bytes of the records kept.
func (t *Top) Held() int64 { return t.held }

// Take returns the records kept in the order they were offered and
// leaves the Top empty.
func (t *Top) Take() [][]byte {
	items := t.h.items
	slices.SortFunc(items, func(a, b topItem) int { return cmp.Compare(a.seq, b.seq) })
	t.h.items, t.held = nil, 0
	recs := make([][]byte, len(items))
	for i, it := range items {
		recs[i] = it.rec
	}
	return recs
}

// Sorted returns the records kept in order and leaves the Top empty.
func (t *Top) Sorted() [][]byte {
	recs := t.Take()
	slices.SortStableFunc(recs, t.h.cmp)
	return recs
}
