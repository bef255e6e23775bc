package engine

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Explanation describes how a query runs: the access path the planner chose
// and, when executed, what it cost.
type Explanation struct {
	Stage      string   // COLLSCAN, IXSCAN or IDHACK
	IndexName  string   // for IXSCAN and IDHACK
	KeyPattern bson.Raw // for IXSCAN
	Direction  string   // "forward" or "backward"
	Sort       bool     // a blocking SORT stage follows the scan
	Executed   bool
	NReturned  int64
	KeysExam   int64
	DocsExam   int64
	Millis     int64
}

// Explain plans spec and, with execute, runs it to the end to count the
// work. Nothing is modified.
func (e *Engine) Explain(ctx context.Context, db, coll string, spec FindSpec, execute bool) (Explanation, error) {
	var ex Explanation
	q, err := compileQueryAt(spec, e.clock.Now())
	if err != nil {
		return ex, err
	}
	c := e.collection(db, coll)
	if c == nil {
		return Explanation{Stage: "EOF", Direction: "forward", Executed: execute}, nil
	}
	p, err := c.st().planFor(q, spec)
	if err != nil {
		return ex, err
	}
	ex.Stage, ex.IndexName, ex.Direction = p.stage(), p.indexName(), "forward"
	if p.reverse {
		ex.Direction = "backward"
	}
	if p.kind == planIndex {
		ex.KeyPattern = p.ix.Meta.Key
	}
	ex.Sort = q.sort != nil && !p.sorted
	if !execute {
		return ex, nil
	}
	start := time.Now()
	cur, err := e.Find(ctx, db, coll, spec)
	if err != nil {
		return ex, err
	}
	defer cur.Close() // a sort that spilled and then failed keeps its runs otherwise
	if _, err := cur.All(ctx); err != nil {
		return ex, err
	}
	ex.Executed = true
	ex.NReturned = cur.nReturned
	if cur.sc != nil {
		ex.KeysExam, ex.DocsExam = cur.sc.stats.keysExamined, cur.sc.stats.docsExamined
	}
	ex.Millis = time.Since(start).Milliseconds()
	return ex, nil
}
