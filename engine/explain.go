package engine

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/pipeline"
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
	TextQuery  bson.D // the parsed $text of a TEXT_MATCH plan (textquery.go)
	// TextIndexVersion is the textIndexVersion of the text index a
	// TEXT_MATCH plan reads.
	TextIndexVersion int32
	// IndexBounds are an IXSCAN's bounds, for indexes with a hashed field
	// (indexkinds.go); nil for others.
	IndexBounds bson.D
	// Collation is the query's collation, normalised; nil for the simple
	// one (explain shows it in queryPlanner).
	Collation bson.Raw
}

// Explain plans spec and, with execute, runs it to the end to count the
// work. Nothing is modified.
func (e *Engine) Explain(ctx context.Context, db, coll string, spec FindSpec, execute bool) (Explanation, error) {
	var ex Explanation
	collator, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return ex, err
	}
	q, err := compileQueryAt(spec, e.clock.Now(), collator)
	if err != nil {
		return ex, e.textIndexFirst(ctx, db, coll, err)
	}
	if collator != nil {
		ex.Collation = collator.Document()
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
	ex.TextQuery = p.textInfo()
	if p.text != nil {
		ex.TextIndexVersion = p.ix.Text.Version
	}
	if p.kind == planIndex && p.text == nil && q.filter != nil {
		ex.IndexBounds = hashedBounds(p.ix, q.filter.Conjuncts())
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

// PipelineExplanation describes how a pipeline runs: the leading stages
// the query planner took, as one query with its plan, and the stages that
// run after it.
type PipelineExplanation struct {
	// Cursor is the plan of the query the planner runs for the leading
	// $match, $sort, $skip and $limit; nil when the pipeline reads no
	// collection or starts with a stage that reports on it ($collStats,
	// $indexStats).
	Cursor *Explanation
	// Query is the find the planner runs: its filter and sort are what the
	// explanation reports as parsedQuery and sortPattern.
	Query FindSpec
	// Stages are the stages after the planner's, as given, with what they
	// cost when executed.
	Stages []StageExplanation
	// Executed is set when the pipeline ran to the end to count its work.
	Executed bool
	Millis   int64 // the whole run
}

// StageExplanation is one stage of a pipeline and, when executed, the
// documents it made and the time it took.
type StageExplanation struct {
	Spec      bson.Raw
	NReturned int64
	Millis    int64
}

// ExplainAggregate explains a pipeline over db.coll (coll "" for a
// pipeline of the database, {aggregate: 1}, whose first stage's documents
// are docs). With execute the pipeline runs to its end, one stage at a
// time so as to count each stage's documents and time, unless it writes;
// nothing is written and the output is dropped.
func (e *Engine) ExplainAggregate(ctx context.Context, db, coll string, stages []bson.Raw, docs []bson.Raw, opts AggregateOptions, execute bool) (PipelineExplanation, error) {
	var ex PipelineExplanation
	if coll != "" {
		if err := e.checkCollectionPipeline(db, stages); err != nil {
			return ex, err
		}
	}
	if coll != "" && geoNearFirst(stages) {
		return e.explainGeoNear(ctx, db, coll, stages, opts, execute)
	}
	// Compiling the whole pipeline checks every stage before anything
	// runs, as the pipeline itself would.
	all, err := pipeline.Compile(stages, e.pipelineOptions(db, opts))
	if err != nil {
		return ex, err
	}
	n := 0
	stats := isStatsStage(stages)
	if coll != "" && !stats {
		ex.Query, n = planned(stages)
		ex.Query.AllowDiskUse, ex.Query.Hint = opts.AllowDiskUse, opts.Hint
		cur, err := e.Explain(ctx, db, coll, ex.Query, false)
		if err != nil {
			return ex, err
		}
		ex.Cursor = &cur
	}
	for _, st := range stages[n:] {
		ex.Stages = append(ex.Stages, StageExplanation{Spec: st})
	}
	if !execute || writes(stages[n:]) {
		// A pipeline that writes ($out, $merge) is explained without
		// running it, as MongoDB does: explain changes nothing.
		return ex, nil
	}
	start := time.Now()
	switch {
	case ex.Cursor != nil:
		if docs, err = e.explainCursor(ctx, db, coll, ex.Cursor, ex.Query); err != nil {
			return ex, err
		}
	case stats:
		if docs, err = e.statsDocs(db, coll, stages[0], opts); err != nil {
			return ex, err
		}
	}
	for i := range ex.Stages {
		t := time.Now()
		if docs, err = all.Stage(n+i).Run(ctx, pipeline.Slice(docs)); err != nil {
			return ex, err
		}
		ex.Stages[i].NReturned, ex.Stages[i].Millis = int64(len(docs)), time.Since(t).Milliseconds()
	}
	ex.Executed, ex.Millis = true, time.Since(start).Milliseconds()
	return ex, nil
}

// explainCursor runs the planner's query of a pipeline, fills in its
// execution statistics and returns its documents.
func (e *Engine) explainCursor(ctx context.Context, db, coll string, ex *Explanation, spec FindSpec) ([]bson.Raw, error) {
	start := time.Now()
	cur, err := e.Find(ctx, db, coll, spec)
	if err != nil {
		return nil, err
	}
	docs, err := cur.All(ctx)
	if err != nil {
		return nil, err
	}
	ex.Executed, ex.NReturned = true, cur.nReturned
	if cur.sc != nil {
		ex.KeysExam, ex.DocsExam = cur.sc.stats.keysExamined, cur.sc.stats.docsExamined
	}
	ex.Millis = time.Since(start).Milliseconds()
	return docs, nil
}

// statsDocs makes the documents of a leading $collStats or $indexStats.
func (e *Engine) statsDocs(db, coll string, first bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	name, arg, err := pipeline.StageOf(first)
	if err != nil {
		return nil, err
	}
	if name == "$indexStats" {
		return e.indexStatsDocs(db, coll, opts.Host)
	}
	spec, err := pipeline.ParseCollStats(arg)
	if err != nil {
		return nil, err
	}
	doc, err := e.collStatsDoc(context.TODO(), db, coll, spec, opts.Host)
	if err != nil {
		return nil, err
	}
	return []bson.Raw{doc}, nil
}

// writes reports whether a stage of a pipeline writes a collection.
func writes(stages []bson.Raw) bool {
	for _, st := range stages {
		if name, _, err := pipeline.StageOf(st); err == nil && (name == "$out" || name == "$merge") {
			return true
		}
	}
	return false
}
