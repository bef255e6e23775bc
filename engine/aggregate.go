package engine

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/lethedb/lethe/bsonvalue"
	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/letvars"
	"github.com/lethedb/lethe/engine/pipeline"
	"github.com/lethedb/lethe/engine/text"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/engine/viewdef"
	"github.com/lethedb/lethe/engine/writestage"

	// $setWindowFields registers itself with package pipeline; imported
	// here so that every pipeline the engine compiles knows it.
	_ "github.com/lethedb/lethe/engine/pipeline/window"
	"github.com/lethedb/lethe/mongoerr"
)

// Aggregate runs a pipeline over db.coll and returns all its output. The
// leading $match, $sort, $skip and $limit stages become one query, so they
// use the planner and indexes; package pipeline runs the rest in memory.
func (e *Engine) Aggregate(ctx context.Context, db, coll string, stages []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	opts.Stream = false
	res, err := e.AggregateStream(ctx, db, coll, stages, opts)
	return res.Docs, err
}

// Results is the output of an aggregation that a cursor reads from disk:
// that of a final $sort that spilled (pipeline.SortedResults). It holds
// temporary files until closed, and, in memory, about as much as a find's
// spilled sort does.
type Results interface {
	NextBatch(ctx context.Context, n int, maxBytes int) ([]bson.Raw, error)
	Exhausted() bool
	HeldBytes() int64
	Close() error
}

// AggregateResult is the output of a pipeline over a collection.
type AggregateResult struct {
	Docs []bson.Raw
	// Rest, with AggregateOptions.Stream, is the output instead of Docs
	// when it is on disk, left there by a final sort that spilled: the
	// caller reads it as a cursor and closes it.
	Rest Results
	// Source is the collection the output streams from: in MongoDB a
	// pipeline reads its collection as its cursor is read, and dropping or
	// renaming the collection kills the cursor (Source.Check), unless a
	// blocking stage ($sort without an index, $group, $count) read all of
	// it before the first result. Source is zero then.
	Source Incarnation
}

// AggregateOptions are the options of an aggregate command that shape how
// its pipeline runs.
type AggregateOptions struct {
	// AllowDiskUse lets sorts and blocking stages spill to disk past the
	// sort limit, as for FindSpec.
	AllowDiskUse bool
	// Hint names the index (by name or key pattern) that reads the
	// collection for the leading $match and $sort stages.
	Hint bson.RawValue
	// BypassDocumentValidation skips the validators of the collections
	// $out and $merge write.
	BypassDocumentValidation bool
	// Host is the server's "host:port", as $collStats and $indexStats
	// report it; the machine's name if empty.
	Host string
	// Stream lets the output of a final sort that spilled stay on disk
	// for a cursor to read (AggregateResult.Rest), as find's does,
	// rather than be held in memory whole.
	Stream bool
}

// AggregateStream is Aggregate that also tells what kills its cursor.
func (e *Engine) AggregateStream(ctx context.Context, db, coll string, stages []bson.Raw, opts AggregateOptions) (AggregateResult, error) {
	return e.aggregate(ctx, db, coll, stages, opts)
}

// ApplyStages runs pipeline stages over documents the caller produced, such
// as the server's answer to $collStats or $currentOp.
func (e *Engine) ApplyStages(ctx context.Context, docs []bson.Raw, stages []bson.Raw) ([]bson.Raw, error) {
	p, err := pipeline.Compile(stages, e.pipelineOptions("", AggregateOptions{}))
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, pipeline.Slice(docs))
}

// pipelineOptions are the options of the in-memory stages of a pipeline
// in db.
func (e *Engine) pipelineOptions(db string, opts AggregateOptions) pipeline.Options {
	return pipeline.Options{
		Now:          e.clock.Now(),
		AllowDiskUse: opts.AllowDiskUse,
		SortLimit:    e.sortLimit,
		MemLimit:     e.memLimit,
		DB:           db,
		Catalog:      catalogReader{e: e, opts: opts},
	}
}

func (e *Engine) aggregate(ctx context.Context, db, coll string, stages []bson.Raw, opts AggregateOptions) (res AggregateResult, err error) {
	if err := e.checkCollectionPipeline(db, stages); err != nil {
		return res, err
	}
	if isStatsStage(stages) {
		res.Docs, err = e.aggregateStats(ctx, db, coll, stages, opts)
		return res, err
	}
	if err := checkTextStages(stages); err != nil {
		return res, err
	}
	// Every stage is checked first, as MongoDB parses a pipeline before
	// it runs any of it.
	po := e.pipelineOptions(db, opts)
	if po.Collator, err = e.queryCollator(ctx, db, coll); err != nil {
		return res, err
	}
	if err := e.checkJoinedViews(ctx, db, stages, po.Collator); err != nil {
		return res, err
	}
	// The stages that read other collections ($lookup, $unionWith,
	// $graphLookup) compare under the aggregation's collation too.
	ctx = WithCollation(ctx, po.Collator.Document())
	if opts.AllowDiskUse {
		// The request's temporary files, for the blocking sort of its
		// query and its stages alike; the output is in memory by the
		// time they go, or they go with the cursor that reads it.
		po.Scratch = e.newScratch()
		defer func() {
			if res.Rest != nil {
				return
			}
			if err := po.Scratch.Close(); err != nil {
				e.log.Warn("removing the temporary files of an aggregation", zap.Error(err))
			}
		}()
	}
	if geoNearFirst(stages) {
		return e.aggregateGeoNear(ctx, db, coll, stages, po)
	}
	all, err := pipeline.Compile(stages, po)
	if err != nil {
		if firstMatchTextPlacement(stages) {
			// The pipeline's query refuses its $text as a find's filter
			// does, after the text index is looked for.
			err = e.textIndexFirst(ctx, db, coll, err)
		}
		return res, err
	}
	spec, n := planned(stages)
	spec.AllowDiskUse, spec.Hint = opts.AllowDiskUse, opts.Hint
	spec.scratch = po.Scratch
	p := all.From(n)
	cur, err := e.Find(ctx, db, coll, spec)
	if err != nil {
		return res, err
	}
	if cur.score != nil {
		// The stages after the query read its text score.
		ctx = text.WithScorer(ctx, cur.score)
	}
	if opts.Stream && n == len(stages) && cur.sorted != nil {
		// The query is the whole pipeline and its sort spilled: the
		// cursor reads its runs as a find's does. It takes the
		// request's temporary files with it.
		cur.scratch = po.Scratch
		res.Rest = cur
		return res, nil
	}
	defer cur.Close()
	if !cur.materialized && !p.Blocks() {
		res.Source = cur.incarnation()
	}
	if !opts.Stream {
		res.Docs, err = p.Run(ctx, cursorDocs(ctx, cur))
		return res, err
	}
	docs, sorted, err := p.RunSorted(ctx, cursorDocs(ctx, cur))
	if err != nil {
		return AggregateResult{}, err
	}
	if sorted != nil {
		res.Rest = pipeline.NewSortedResults(sorted, po.Scratch)
		return res, nil
	}
	res.Docs = docs
	return res, nil
}

// planned makes the query of the leading stages the planner runs, the
// $match, $sort, $skip and $limit a find can express and a $project of
// fields after them, and says how many they are. The stages were checked
// already.
func planned(stages []bson.Raw) (FindSpec, int) {
	var spec FindSpec
	var filters bson.A
	i := 0
loop:
	for ; i < len(stages); i++ {
		name, arg, _ := pipeline.StageOf(stages[i])
		// A find filters, then sorts, then skips, then limits: a stage
		// joins the query only where that order keeps its meaning.
		untouched := spec.Sort == nil && spec.Skip == 0 && spec.Limit == 0
		switch {
		case name == "$match" && untouched:
			filters = append(filters, arg.Document())
		case name == "$sort" && untouched:
			spec.Sort = arg.Document()
		case name == "$skip" || name == "$limit":
			n, _ := bsonvalue.IntegerValue(bsoncore.Value{Type: bsoncore.Type(arg.Type), Data: arg.Value})
			if n <= 0 {
				break loop // skips nothing
			}
			if name == "$limit" {
				if spec.Limit == 0 || n < spec.Limit {
					spec.Limit = n
				}
				continue
			}
			if spec.Limit > 0 {
				if n >= spec.Limit {
					break loop // nothing passes; the stage says so
				}
				spec.Limit -= n
			}
			spec.Skip += n
		case name == "$project" && plainProjection(arg.Document()):
			// A find projects last: the projection ends the query.
			spec.Projection = arg.Document()
			i++
			break loop
		default:
			break loop
		}
	}
	switch len(filters) {
	case 0:
	case 1:
		spec.Filter = filters[0].(bson.Raw)
	default:
		spec.Filter, _ = bson.Marshal(bson.D{{Key: "$and", Value: filters}})
	}
	return spec, i
}

// plainProjection reports whether a $project only includes or excludes
// fields, which a find's projection does the same way.
func plainProjection(spec bson.Raw) bool {
	elems, err := spec.Elements()
	if err != nil || len(elems) == 0 {
		return false
	}
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "" || k[0] == '$' || strings.Contains(k, "$"):
			return false
		}
		switch el.Value().Type {
		case bson.TypeBoolean, bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		default:
			return false
		}
	}
	return true
}

// sourceBatchBytes is about how much of a collection a pipeline reads at
// a time: small, since the stages that follow may hold little more.
const sourceBatchBytes = 1 << 20

// cursorDocs reads a cursor a batch at a time.
func cursorDocs(ctx context.Context, cur *Cursor) pipeline.Source {
	return func(fn func(bson.Raw) error) error {
		for !cur.Exhausted() {
			// A copy of each document: a stage may keep some.
			b, err := cur.nextBatch(ctx, 0, sourceBatchBytes, nil)
			if err != nil {
				return err
			}
			for _, d := range b {
				if err := fn(d); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// AggregateDB runs a pipeline of a database rather than a collection
// ({aggregate: 1}) whose first stage makes its documents, as $documents
// does.
func (e *Engine) AggregateDB(ctx context.Context, db string, stages []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	if err := pipeline.CheckNamespace(stages, db, true); err != nil {
		return nil, err
	}
	if len(stages) == 0 || !pipeline.MakesDocuments(stages[0]) {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "{aggregate: 1} is not valid for '%s'; a collection is required.", firstStageName(stages))
	}
	// Its first stage makes the documents: none come in.
	return e.AggregateDocs(ctx, db, nil, stages, opts)
}

// checkJoinedViews refuses a pipeline that reads a view ($lookup,
// $graphLookup, $unionWith, at any depth) whose default collation is not
// coll, the aggregation's: a view's reads compare strings under its own
// collation, which an aggregation may not override. mongod checks this
// before it runs a pipeline (collatorCompatibleWithPipeline in
// src/mongo/db/commands/run_aggregate.cpp), whether or not a join runs.
func (e *Engine) checkJoinedViews(ctx context.Context, db string, stages []bson.Raw, coll *collation.Collator) error {
	for _, name := range viewdef.InvolvedNamespaces(stages) {
		v, ok := e.View(ctx, db, name)
		if !ok {
			continue
		}
		var vc *collation.Collator
		if v.Collation != nil {
			var err error
			if vc, err = e.collators.parse(v.Collation); err != nil {
				return err
			}
		}
		if !collation.Equal(vc, coll) {
			// mongod's message runs the namespace on without a space.
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "Cannot override a view's default collation%s.%s", db, name)
		}
	}
	return nil
}

// collectionlessOptions are the options of a pipeline over no collection,
// and ctx for its sub-pipelines: it runs under the collation the command
// names, or the simple one, as mongod's aggregate does whatever its first
// stage.
func (e *Engine) collectionlessOptions(ctx context.Context, db string, opts AggregateOptions) (context.Context, pipeline.Options, error) {
	po := e.pipelineOptions(db, opts)
	coll, err := e.commandCollator(ctx, nil)
	if err != nil {
		return ctx, po, err
	}
	po.Collator = coll
	return WithCollation(ctx, coll.Document()), po, nil
}

func firstStageName(stages []bson.Raw) string {
	if len(stages) == 0 {
		return "an empty pipeline"
	}
	name, _, _ := pipeline.StageOf(stages[0])
	return name
}

// AggregateDocs runs a pipeline of db whose first stage's documents the
// caller made, as the server makes those of $currentOp and
// $listLocalSessions: docs go through the rest of the stages.
func (e *Engine) AggregateDocs(ctx context.Context, db string, docs []bson.Raw, stages []bson.Raw, opts AggregateOptions) ([]bson.Raw, error) {
	ctx, po, err := e.collectionlessOptions(ctx, db, opts)
	if err != nil {
		return nil, err
	}
	if err := e.checkJoinedViews(ctx, db, stages, po.Collator); err != nil {
		return nil, err
	}
	p, err := pipeline.Compile(stages, po)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, pipeline.Slice(docs))
}

// checkCollectionPipeline applies the rules of a pipeline over a
// collection that come before its stages are compiled, in MongoDB's order:
// where the metadata stages may run, checked as the stages are parsed;
// then that the first stage needs a collection.
func (e *Engine) checkCollectionPipeline(db string, stages []bson.Raw) error {
	if err := pipeline.CheckNamespace(stages, db, false); err != nil {
		return err
	}
	if len(stages) > 0 && pipeline.MakesDocuments(stages[0]) {
		return mongoerr.New(mongoerr.InvalidNamespace, "'%s' can only be run with {aggregate: 1}", firstStageName(stages))
	}
	return nil
}

// catalogReader is the store as the stages of package pipeline that read
// and write other collections see it: reads through the planner, writes
// through the normal write paths.
type catalogReader struct {
	e    *Engine
	opts AggregateOptions
}

func (c catalogReader) Find(ctx context.Context, db, coll string, filter bson.Raw) (pipeline.Source, error) {
	// A join into a view reads what the view shows: its pipeline, then
	// the filter, as MongoDB resolves a view in $lookup and $unionWith.
	source, viewStages, isView, err := c.e.ResolveView(ctx, db, coll)
	if err != nil {
		return nil, err
	}
	if isView {
		if filter != nil {
			match, err := bson.Marshal(bson.D{{Key: "$match", Value: filter}})
			if err != nil {
				return nil, fmt.Errorf("engine: a join's filter on view %s.%s: %w", db, coll, err)
			}
			viewStages = append(viewStages, match)
		}
		docs, err := c.Aggregate(ctx, db, source, viewStages, nil)
		if err != nil {
			return nil, err
		}
		return pipeline.Slice(docs), nil
	}
	cur, err := c.e.Find(ctx, db, coll, FindSpec{Filter: filter, AllowDiskUse: c.opts.AllowDiskUse})
	if err != nil {
		return nil, err
	}
	return cursorDocs(ctx, cur), nil
}

func (c catalogReader) Aggregate(ctx context.Context, db, coll string, stages []bson.Raw, vars pipeline.Vars) ([]bson.Raw, error) {
	if len(vars) > 0 {
		var err error
		if stages, err = letvars.Of(vars).Pipeline(stages); err != nil {
			return nil, err
		}
	}
	opts := AggregateOptions{AllowDiskUse: c.opts.AllowDiskUse, BypassDocumentValidation: c.opts.BypassDocumentValidation}
	if coll == "" {
		return c.e.AggregateDB(ctx, db, stages, opts)
	}
	source, viewStages, _, err := c.e.ResolveView(ctx, db, coll)
	if err != nil {
		return nil, err
	}
	return c.e.Aggregate(ctx, db, source, append(viewStages, stages...), opts)
}

// Out carries out $out (package writestage) through the engine's write
// paths.
func (c catalogReader) Out(ctx context.Context, db, coll string, docs []bson.Raw) error {
	return writestage.Out(ctx, stageWriter{e: c.e, bypass: c.opts.BypassDocumentValidation}, db, coll, docs)
}

// Merge carries out $merge (package writestage) through the engine's
// write paths.
func (c catalogReader) Merge(ctx context.Context, m *pipeline.Merge, docs []pipeline.MergeDoc) error {
	return writestage.Merge(ctx, stageWriter{e: c.e, bypass: c.opts.BypassDocumentValidation}, m, docs)
}

// stageWriter is the engine as $out and $merge write through it
// (writestage.Host); bypass skips the validators of the collections they
// write.
type stageWriter struct {
	e      *Engine
	bypass bool
}

func (w stageWriter) Insert(ctx context.Context, db, coll string, docs []bson.Raw) error {
	res, err := w.e.Insert(ctx, db, coll, docs, true, WriteOptions{BypassDocumentValidation: w.bypass})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return err
}

func (w stageWriter) Update(ctx context.Context, db, coll string, filter bson.Raw, u *update.Update, upsert bool) (int64, error) {
	res, err := w.e.Update(ctx, db, coll, UpdateSpec{Filter: filter, Update: u, Upsert: upsert, BypassDocumentValidation: w.bypass})
	return res.Matched, err
}

func (w stageWriter) Exists(ctx context.Context, db, coll string, filter bson.Raw) (bool, error) {
	cur, err := w.e.Find(ctx, db, coll, FindSpec{Filter: filter, Limit: 1})
	if err != nil {
		return false, err
	}
	docs, err := cur.All(ctx)
	return len(docs) > 0, err
}

func (w stageWriter) EnsureCollection(db, coll string, options bson.Raw) error {
	_, _, err := w.e.ensureCollection(db, coll, options)
	return err
}

func (w stageWriter) Target(db, coll string) (options bson.Raw, indexes []bson.Raw, err error) {
	target := w.e.collection(db, coll)
	if target == nil {
		return nil, nil, nil
	}
	st := target.st()
	for _, im := range st.meta.Indexes {
		spec, err := bson.Marshal(im.Spec())
		if err != nil {
			return nil, nil, fmt.Errorf("engine: $out: index %s: %w", im.Name, err)
		}
		indexes = append(indexes, spec)
	}
	return st.meta.Options, indexes, nil
}

func (w stageWriter) CreateIndexes(db, coll string, specs []bson.Raw) error {
	_, err := w.e.CreateIndexes(context.TODO(), db, coll, specs)
	return err
}

func (w stageWriter) DropCollection(db, coll string) {
	_, _ = w.e.DropCollection(context.TODO(), db, coll)
}

func (w stageWriter) RenameOver(db, from, to string) error {
	return w.e.renameOver(context.TODO(), db, from, to)
}

func (w stageWriter) UniqueIndexOn(ctx context.Context, db, coll string, fields []string) bool {
	return w.e.uniqueIndexOn(ctx, db, coll, fields)
}

// uniqueIndexOn reports whether db.coll has a unique index, not partial,
// whose fields are exactly fields and whose collation is the one ctx's
// command runs under, which makes $merge's on fields identify one
// document as the aggregation compares them: mongod's supportsUniqueKey
// asks that the index's collator match the ExpressionContext's
// (src/mongo/db/pipeline/process_interface/common_mongod_process_interface.cpp).
func (e *Engine) uniqueIndexOn(ctx context.Context, db, coll string, fields []string) bool {
	onID := len(fields) == 1 && fields[0] == "_id"
	c := e.collection(db, coll)
	if c == nil {
		// A collection to be made has only its _id index to come.
		return onID
	}
	qc, err := e.queryCollator(ctx, db, coll)
	if err != nil {
		return false
	}
	if onID {
		// The _id index is unique, under the collection's default.
		return collation.Equal(c.st().coll, qc)
	}
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	for _, im := range c.st().meta.Indexes {
		if !im.Unique || im.Partial != nil {
			continue
		}
		var ic *collation.Collator // nil for the simple collation
		if doc := im.Collation(); doc != nil {
			if ic, err = e.collators.parse(doc); err != nil {
				continue
			}
		}
		if !collation.Equal(ic, qc) {
			continue
		}
		keys, _ := im.Key.Elements()
		if len(keys) != len(want) {
			continue
		}
		all := true
		for _, k := range keys {
			all = all && want[k.Key()]
		}
		if all {
			return true
		}
	}
	return false
}
