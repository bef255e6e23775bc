package engine

import (
	"cmp"
	"container/heap"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// topK keeps the first k of the documents it is offered in the order of a
// sort, as MongoDB's sort under a limit does: a find sorted without an
// index and limited holds its skip and limit's worth of documents, not
// every match. Of documents equal in the sort, the earlier offered comes
// first, as in a stable sort of them all.
type topK struct {
	k    int64
	cmp  func(a, b bson.Raw) int
	h    topHeap
	seq  int64
	held int64 // bytes of the documents kept
}

// topItem is a document kept and when it was offered.
type topItem struct {
	d   storedDoc
	seq int64
}

// topHeap has the last of the documents kept on top.
type topHeap struct {
	items []topItem
	cmp   func(a, b bson.Raw) int
}

// before reports whether a comes before b.
func (h *topHeap) before(a, b topItem) bool {
	c := h.cmp(a.d.doc, b.d.doc)
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

func newTopK(k int64, cmp func(a, b bson.Raw) int) *topK {
	return &topK{k: k, cmp: cmp, h: topHeap{cmp: cmp}}
}

// offer keeps a copy of d if it is among the first k so far.
func (t *topK) offer(d *storedDoc) {
	it := topItem{d: *d, seq: t.seq}
	t.seq++
	if int64(t.h.Len()) == t.k {
		if !t.h.before(it, t.h.items[0]) {
			return
		}
		t.held -= int64(len(t.h.items[0].d.doc))
		heap.Pop(&t.h)
	}
	it.d = storedDoc{h: d.h, doc: append(bson.Raw(nil), d.doc...)}
	heap.Push(&t.h, it)
	t.held += int64(len(it.d.doc))
}

// take returns the documents kept in the order they were offered, and
// leaves the topK empty.
func (t *topK) take() []topItem {
	items := t.h.items
	slices.SortFunc(items, func(a, b topItem) int { return cmp.Compare(a.seq, b.seq) })
	t.h.items, t.held = nil, 0
	return items
}

// sorted returns the documents kept in order, and leaves the topK empty.
func (t *topK) sorted() []storedDoc {
	items := t.take()
	slices.SortStableFunc(items, func(a, b topItem) int { return t.cmp(a.d.doc, b.d.doc) })
	docs := make([]storedDoc, len(items))
	for i, it := range items {
		docs[i] = it.d
	}
	return docs
}
