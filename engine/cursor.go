package engine

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/mongoerr"
	"github.com/lethedb/lethe/engine/project"
	"github.com/lethedb/lethe/engine/query"
)

// FindSpec is a query: filter, order, shape and window.
type FindSpec struct {
	Filter     bson.Raw
	Sort       bson.Raw
	Projection bson.Raw
	Skip       int64
	Limit      int64 // 0: no limit
	Hint       bson.RawValue
	// AllowDiskUse lifts the memory limit of sorts no index provides. Lethe
	// still sorts in memory; the flag only says the client accepts that.
	AllowDiskUse bool
}

// Cursor streams the results of a query in batches.
type Cursor struct {
	e      *Engine
	coll   *Collection
	opened *collState // the collection as the cursor found it
	sc     *scanner
	filter *query.Filter
	proj   *project.Projection
	skip   int64
	limit  int64 // remaining; -1 means no limit
	// sorted results, when the plan does not give the order: read at once
	// and re-checked for expiry when handed out.
	items        []storedDoc
	materialized bool
	exhausted    bool
	nReturned    int64
}

// compiledQuery is a FindSpec's parts, compiled.
type compiledQuery struct {
	filter *query.Filter
	sort   *query.Sort
	proj   *project.Projection
}

func compileQuery(spec FindSpec) (*compiledQuery, error) {
	var q compiledQuery
	var err error
	if q.filter, err = query.Compile(spec.Filter); err != nil {
		return nil, err
	}
	if len(spec.Sort) > 0 {
		if q.sort, err = query.CompileSort(spec.Sort); err != nil {
			return nil, err
		}
	}
	if len(spec.Projection) > 0 {
		if q.proj, err = project.Compile(spec.Projection); err != nil {
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
	q, err := compileQuery(spec)
	if err != nil {
		return nil, err
	}
	cur := &Cursor{e: e, filter: q.filter, proj: q.proj, skip: spec.Skip, limit: -1}
	if spec.Limit > 0 {
		cur.limit = spec.Limit
	}
	c := e.collection(db, coll)
	if c == nil {
		cur.exhausted = true
		return cur, nil
	}
	cur.coll = c
	st := c.st()
	cur.opened = st
	p, err := st.choosePlan(q.filter, q.sort, spec.Hint)
	if err != nil {
		return nil, err
	}
	cur.sc = &scanner{e: e, coll: c, p: p}
	if !p.sorted && q.sort != nil {
		limit := e.sortLimit
		if spec.AllowDiskUse {
			limit = -1
		}
		if err := cur.materialize(ctx, q.sort, limit); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// materialize reads every match and sorts it, holding at most maxBytes of
// documents (-1: no limit).
func (c *Cursor) materialize(ctx context.Context, srt *query.Sort, maxBytes int64) error {
	var held int64
	for !c.sc.done {
		err := c.sc.next(ctx, func(d *storedDoc) (bool, error) {
			if !c.filter.Match(d.doc) {
				return true, nil
			}
			held += int64(len(d.doc))
			if maxBytes >= 0 && held > maxBytes {
				return false, mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", maxBytes)
			}
			c.items = append(c.items, storedDoc{pk: append([]byte(nil), d.pk...), h: d.h, doc: append(bson.Raw(nil), d.doc...)})
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	sort.SliceStable(c.items, func(i, j int) bool { return srt.Compare(c.items[i].doc, c.items[j].doc) < 0 })
	c.materialized = true
	return nil
}

// Exhausted reports whether the cursor has nothing more to return.
func (c *Cursor) Exhausted() bool { return c.exhausted }

// NextBatch returns up to n documents (n <= 0: no count limit) and at most
// about maxBytes of them.
func (c *Cursor) NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error) {
	var out []bson.Raw
	size := 0
	take := func(d *storedDoc) (bool, error) {
		matched, pos := c.filter.MatchPositional(d.doc)
		if !c.materialized && !matched {
			return true, nil
		}
		if c.skip > 0 {
			c.skip--
			return true, nil
		}
		doc := bson.Raw(d.doc)
		if c.proj != nil {
			var err error
			if doc, err = c.proj.Apply(doc, pos); err != nil {
				return false, err
			}
		} else {
			doc = append(bson.Raw(nil), doc...)
		}
		out = append(out, doc)
		size += len(doc)
		c.nReturned++
		if c.limit > 0 {
			c.limit--
			if c.limit == 0 {
				c.exhausted = true
				return false, nil
			}
		}
		return !(n > 0 && len(out) >= n) && size < maxBytes, nil
	}
	if c.exhausted {
		return nil, nil
	}
	st := c.coll.st()
	if err := st.killedSince(c.opened, c.sc.p.ix); err != nil {
		c.exhausted = true
		return nil, err
	}
	if c.materialized {
		nowMs := c.e.nowMillis()
		for len(c.items) > 0 {
			d := &c.items[0]
			c.items = c.items[1:]
			if st.expired(d.h, nowMs) {
				continue
			}
			more, err := take(d)
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
		}
		if len(c.items) == 0 {
			c.exhausted = true
		}
		return out, nil
	}
	if err := c.sc.next(ctx, take); err != nil {
		return nil, err
	}
	if c.sc.done {
		c.exhausted = true
	}
	return out, nil
}

// All drains the cursor.
func (c *Cursor) All(ctx context.Context) ([]bson.Raw, error) {
	var all []bson.Raw
	for !c.exhausted {
		b, err := c.NextBatch(ctx, 0, 1<<30)
		if err != nil {
			return nil, err
		}
		all = append(all, b...)
	}
	return all, nil
}
