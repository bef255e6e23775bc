package engine

import (
	"context"
	"sort"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/project"
	"github.com/lethedb/lethe/engine/query"
	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/mongoerr"
)

// FindSpec is a query: filter, order, shape and window.
type FindSpec struct {
	Filter     bson.Raw
	Sort       bson.Raw
	Projection bson.Raw
	Skip       int64
	Limit      int64 // 0: no limit
	Hint       bson.RawValue
	// AllowDiskUse lets a sort no index provides spill to disk past the
	// sort limit instead of failing.
	AllowDiskUse bool
	// scratch is where a spilling sort writes when the caller has the
	// request's temporary space (aggregate); nil gives the cursor its own.
	scratch *spill.Scratch
	// Min and Max bound the scan of the hinted index by keys of its key
	// pattern, Min inclusive and Max exclusive; empty means unbounded.
	Min, Max bson.Raw
	// ReturnKey returns each match's index key instead of the document.
	ReturnKey bool
}

// Cursor streams the results of a query in batches.
type Cursor struct {
	e      *Engine
	coll   *Collection
	opened *collState // the collection as the cursor found it
	sc     *scanner
	filter *query.Filter
	match  *query.Matcher // filter's, for the documents NextBatch reads
	proj   *project.Projection
	keys   *keyReturner // for FindSpec.ReturnKey
	skip   int64
	limit  int64 // remaining; -1 means no limit
	// sorted results, when the plan does not give the order: read at once
	// and re-checked for expiry when handed out.
	items        []storedDoc
	held         int64 // bytes of documents in items
	materialized bool
	// sorted is the rest of a sort that spilled, which refill takes into
	// items; scratch, when the cursor owns it, holds its runs.
	sorted    *spill.Iter
	scratch   *spill.Scratch
	exhausted bool
	nReturned int64
	// pending is a result that did not fit in the last batch: the next
	// one starts with it.
	pending bson.Raw
	// ol, when set, reads local.oplog.rs instead of a collection.
	ol *oplogstore.Cursor
	// score is the text score of the query's $text, which scoreFields
	// project (textquery.go).
	score       text.Scorer
	scoreFields []string
}

// compiledQuery is a FindSpec's parts, compiled.
type compiledQuery struct {
	filter *query.Filter
	sort   *query.Sort
	proj   *project.Projection
	// scoreFields are the fields the projection sets to the text score.
	scoreFields []string
}

// now is the time of the command, the value of $$NOW.
// coll is the collation of the command (commandCollator).
func compileQueryAt(spec FindSpec, now time.Time, coll *collation.Collator) (*compiledQuery, error) {
	var q compiledQuery
	var err error
	if q.filter, err = query.CompileWith(spec.Filter, query.Options{Now: now, Collator: coll}); err != nil {
		return nil, err
	}
	if len(spec.Sort) > 0 {
		if q.sort, err = query.CompileSortWith(spec.Sort, coll); err != nil {
			return nil, err
		}
	}
	proj := spec.Projection
	proj, q.scoreFields = splitTextMeta(proj)
	if len(proj) > 0 {
		if q.proj, err = project.CompileWith(proj, project.Options{Now: now, Collator: coll}); err != nil {
			return nil, err
		}
	}
	if spec.Skip < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "skip value must be non-negative, but received: %d", spec.Skip)
	}
	return &q, nil
}

// Find opens a cursor over db.coll. A missing collection yields no results.
func (e *Engine) Find(ctx context.Context, db, coll string, spec FindSpec) (*Cursor, error) {
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return nil, err
	}
	q, err := compileQueryAt(spec, e.clock.Now(), collator)
	if err != nil {
		return nil, e.textIndexFirst(ctx, db, coll, err)
	}
	cur := &Cursor{e: e, filter: q.filter, match: q.filter.Matcher(), proj: q.proj, skip: spec.Skip, limit: -1}
	if spec.Limit > 0 {
		cur.limit = spec.Limit
	}
	if e.isOplogNS(db, coll) {
		return e.findOplog(ctx, cur, q, spec)
	}
	c := e.collection(db, coll)
	if c == nil {
		if q.filter.Text() != nil {
			// MongoDB's parser looks for the text index of $text in
			// the collection, and finds no collection.
			return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query (no such collection '%s.%s')", db, coll)
		}
		cur.exhausted = true
		return cur, nil
	}
	cur.coll = c
	st, err := readState(ctx, c)
	if err != nil {
		return nil, err
	}
	cur.opened = st
	p, err := st.planFor(q, spec)
	if err != nil {
		return nil, err
	}
	p.countUse(&c.usage, e.clock)
	if err := cur.bindText(q, p); err != nil {
		return nil, err
	}
	if spec.ReturnKey {
		cur.keys = newKeyReturner(st, p)
	}
	cur.sc = &scanner{e: e, coll: c, p: p, multi: transactionOf(ctx)}
	if p.near != nil {
		if err := cur.materializeNear(ctx, p, q.sort, nearKeep(spec, q.sort)); err != nil {
			_ = cur.Close()
			return nil, err
		}
		return cur, nil
	}
	if !p.sorted && q.sort != nil {
		// Under a limit, only the first skip+limit matches are kept.
		var k int64
		if spec.Limit > 0 {
			k = spec.Skip + spec.Limit
		}
		if spec.AllowDiskUse {
			err = cur.materializeSpilling(ctx, q.sort, spec.scratch, k)
		} else {
			err = cur.materialize(ctx, q.sort, e.sortLimitOf(), k)
		}
		if err != nil {
			_ = cur.Close()
			return nil, err
		}
	}
	return cur, nil
}

// materialize reads every match and sorts it, or keeps the first k when k
// is not zero, holding at most limit's bytes of documents.
func (c *Cursor) materialize(ctx context.Context, srt *query.Sort, limit pipeline.Limit, k int64) (err error) {
	top := newSortTop(srt, k)
	var held int64
	for !c.sc.done {
		err := c.sc.next(ctx, func(d *storedDoc) (bool, error) {
			if matched, err := c.match.MatchErr(d.doc); err != nil || !matched {
				return err == nil, err
			}
			if top != nil {
				top.offer(d)
				if top.Held() > limit.Bytes {
					return false, limit.Exceeded(limit.Bytes)
				}
				return true, nil
			}
			held += int64(len(d.doc))
			if held > limit.Bytes {
				return false, limit.Exceeded(limit.Bytes)
			}
			doc := d.doc
			if !c.sc.curOwned {
				doc = append(bson.Raw(nil), doc...)
			}
			c.items = append(c.items, storedDoc{pk: append([]byte(nil), d.pk...), h: d.h, doc: doc})
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	if top != nil {
		held = top.Held()
		if c.items, err = top.sorted(); err != nil {
			return err
		}
	} else if srt.Collator() != nil {
		// The keys are dropped after the sort: only the documents stay held.
		if _, err := sortByKeys(c.items, srt, held, limit); err != nil {
			return err
		}
	} else {
		sort.SliceStable(c.items, func(i, j int) bool { return srt.Compare(c.items[i].doc, c.items[j].doc) < 0 })
	}
	c.materialized = true
	c.held = held
	return nil
}

// HeldBytes is the bytes of sorted results the cursor holds in memory.
func (c *Cursor) HeldBytes() int64 { return max(c.held, 0) }

// Exhausted reports whether the cursor has nothing more to return.
func (c *Cursor) Exhausted() bool { return c.exhausted }

// NextBatch returns up to n documents (n <= 0: no count limit) and at most
// about maxBytes of them. The documents of a batch share a few buffers, so
// that keeping one keeps its buffer's: a batch is for a reply, which copies
// them and drops them together.
func (c *Cursor) NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	return c.nextBatch(ctx, n, maxBytes, &batchBuf{})
}

// AppendBatch appends the batch NextBatch would return to dst as the
// elements of a BSON array, "0", "1", ..., each document's bytes as they
// are, the way a reply's firstBatch or nextBatch holds them. A document
// read from the store is copied once, straight into dst, while the store's
// memory is still valid, rather than into a batch that the reply copies
// again. On an error, dst is returned as it was given; the documents the
// batch had taken are consumed, as with NextBatch.
func (c *Cursor) AppendBatch(ctx context.Context, dst []byte, n int, maxBytes int) ([]byte, error) {
	out := batchOut{appending: true, dst: dst}
	if err := c.fill(ctx, n, maxBytes, &out); err != nil {
		return dst, err
	}
	return out.dst, nil
}

// batchBuf holds the copies of a batch's documents in a few allocations
// rather than one each: a scan of 1 KB documents spent more on their
// allocation and collection than on reading them.
type batchBuf struct{ chunk []byte }

// maxChunk is the largest chunk a batchBuf makes for several documents:
// one of Go's small size classes, since a large object costs the heap's
// lock and often fresh pages, more than the copies it holds.
const maxChunk = 16 << 10

// copy returns a copy of doc; when its chunk has no room, the next one
// is made for about want bytes. A nil batchBuf copies each document on its
// own, for readers that may keep some and drop the rest.
func (b *batchBuf) copy(doc []byte, want int) bson.Raw {
	if b == nil {
		return append(bson.Raw(nil), doc...)
	}
	if cap(b.chunk)-len(b.chunk) < len(doc) {
		b.chunk = make([]byte, 0, max(len(doc), min(want, maxChunk)))
	}
	i := len(b.chunk)
	b.chunk = append(b.chunk, doc...)
	// Capped, so that an append to one document cannot write over the next.
	return bson.Raw(b.chunk[i:len(b.chunk):len(b.chunk)])
}

// batchOut is where fill puts a batch: in docs, with the copies of the
// documents whose memory is not the cursor's to hand out made with buf;
// or, appending, into dst as the elements of a BSON array.
type batchOut struct {
	docs      []bson.Raw
	buf       *batchBuf
	appending bool
	dst       []byte
	n         int // documents in the batch
}

// nextBatch is NextBatch, which copies the documents it reads with buf.
func (c *Cursor) nextBatch(ctx context.Context, n int, maxBytes int, buf *batchBuf) ([]bson.Raw, error) {
	out := batchOut{buf: buf}
	if err := c.fill(ctx, n, maxBytes, &out); err != nil {
		return nil, err
	}
	return out.docs, nil
}

// fill reads the next batch into out.
func (c *Cursor) fill(ctx context.Context, n int, maxBytes int, out *batchOut) error {
	size := 0
	// expect is how many more documents the batch may take, as far as the
	// cursor knows (its limit, n), or -1; it sizes out's slice and buf's
	// chunks.
	expect := func() int {
		k := -1
		if n > 0 {
			k = n - out.n
		}
		if c.limit > 0 && (k < 0 || c.limit < int64(k)) {
			k = int(c.limit)
		}
		return k
	}
	if k := expect(); k > 0 && !out.appending {
		out.docs = make([]bson.Raw, 0, min(k, 128))
	}
	// own copies a document the scan handed over into the batch, with a
	// chunk for as many more like it as the batch may take: those the
	// cursor expects, else as many again as it has, within maxBytes.
	own := func(doc []byte) bson.Raw {
		k := expect()
		if k < 0 {
			k = max(out.n, 8)
		}
		k = min(k, max(maxBytes-size, 0)/max(len(doc), 1)+1)
		return out.buf.copy(doc, k*len(doc))
	}
	// emit adds doc to the batch unless the batch has room for it no
	// more: like MongoDB's, a batch passes maxBytes only with its first
	// document. transient says doc is the scan's memory, valid only
	// during the visit, which the batch copies.
	emit := func(doc bson.Raw, transient bool) bool {
		if out.n > 0 && size+len(doc) > maxBytes {
			if transient {
				doc = append(bson.Raw(nil), doc...)
			}
			c.pending = doc
			return false
		}
		if out.appending {
			out.dst = append(out.dst, byte(bson.TypeEmbeddedDocument))
			out.dst = strconv.AppendInt(out.dst, int64(out.n), 10)
			out.dst = append(out.dst, 0)
			out.dst = append(out.dst, doc...)
		} else {
			if transient {
				doc = own(doc)
			}
			out.docs = append(out.docs, doc)
		}
		out.n++
		size += len(doc)
		c.nReturned++
		if c.limit > 0 {
			c.limit--
			if c.limit == 0 {
				c.exhausted = true
				return false
			}
		}
		return !(n > 0 && out.n >= n) && size < maxBytes
	}
	// take adds d to the batch if it matches; owned says its memory is the
	// cursor's to hand out, else the batch copies it.
	take := func(d *storedDoc, owned bool) (bool, error) {
		matched, pos := true, -1
		var err error
		if c.sc == nil || !c.sc.p.exact {
			if matched, pos, err = c.match.MatchPositional(d.doc); err != nil {
				return false, err
			}
		}
		if !c.materialized && !matched {
			return true, nil
		}
		if c.skip > 0 {
			c.skip--
			return true, nil
		}
		doc := bson.Raw(d.doc)
		if c.keys != nil {
			return emit(c.keys.key(doc), false), nil
		}
		if c.proj != nil && !c.proj.IsEmpty() {
			pctx := ctx
			if c.score != nil {
				pctx = text.WithScorer(ctx, c.score) // for a nested {$meta: "textScore"}
			}
			if doc, err = c.proj.ApplyContext(pctx, doc, pos); err != nil {
				return false, err
			}
			if c.scoreFields != nil {
				score, ok := c.score(d.doc)
				doc = withTextScores(doc, c.scoreFields, score, ok)
			}
			return emit(doc, false), nil
		}
		if c.scoreFields != nil {
			score, ok := c.score(d.doc)
			return emit(withTextScores(doc, c.scoreFields, score, ok), false), nil
		}
		// The scan's document lives only during the call; the empty
		// projection returns it as it is.
		return emit(doc, !owned), nil
	}
	if c.exhausted {
		return nil
	}
	defer func() {
		if c.exhausted {
			_ = c.closeSpill()
		}
	}()
	if c.ol != nil {
		if doc := c.pending; doc != nil {
			c.pending = nil
			if !emit(doc, false) {
				return nil
			}
		}
		if err := c.ol.Next(ctx, func(doc bson.Raw) (bool, error) { return take(&storedDoc{doc: doc}, false) }); err != nil {
			return err
		}
		if c.ol.Done() && c.pending == nil {
			c.exhausted = true
		}
		return nil
	}
	st := c.coll.st()
	if c.sc.multi != nil {
		st = c.opened // a transaction reads the catalog of its snapshot
	}
	err := st.killedSince(c.opened, c.sc.p.ix)
	for _, x := range c.sc.p.orIndexes {
		if err == nil {
			err = st.killedSince(c.opened, x)
		}
	}
	if err != nil {
		c.exhausted = true
		return err
	}
	if doc := c.pending; doc != nil {
		c.pending = nil
		if !emit(doc, false) {
			if c.pending == nil && (c.materialized && len(c.items) == 0 && c.sorted == nil || !c.materialized && c.sc.done) {
				c.exhausted = true
			}
			return nil
		}
	}
	if c.materialized {
		nowMs := c.e.nowMillis()
		if err := c.refill(ctx); err != nil {
			return err
		}
		for len(c.items) > 0 {
			d := &c.items[0]
			more := true
			var err error
			if !st.expired(d.h, nowMs) {
				more, err = take(d, false)
			}
			// Cleared, so that what was handed out is not kept alive.
			c.held -= int64(len(d.doc))
			*d = storedDoc{}
			c.items = c.items[1:]
			if err != nil {
				return err
			}
			if err := c.refill(ctx); err != nil {
				return err
			}
			if !more {
				break
			}
		}
		if len(c.items) == 0 && c.pending == nil {
			c.exhausted = true
		}
		return nil
	}
	err = c.sc.next(ctx, func(d *storedDoc) (bool, error) { return take(d, c.sc.curOwned) })
	if err != nil {
		return err
	}
	if c.sc.done && c.pending == nil {
		c.exhausted = true
	}
	return nil
}

// All drains the cursor, into a copy of each document: its callers may
// keep some of them longer than the rest.
func (c *Cursor) All(ctx context.Context) ([]bson.Raw, error) {
	var all []bson.Raw
	for !c.exhausted {
		b, err := c.nextBatch(ctx, 0, 1<<30, nil)
		if err != nil {
			return nil, err
		}
		all = append(all, b...)
	}
	return all, nil
}
