package pipeline

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/spill"
	"github.com/lethedb/lethe/mongoerr"
)

// Source calls fn with documents in turn until fn fails or the documents
// end. fn may keep the documents: a Source never reuses their memory.
type Source func(fn func(doc bson.Raw) error) error

// Slice is the Source of docs.
func Slice(docs []bson.Raw) Source {
	return func(fn func(bson.Raw) error) error {
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// Catalog is what the stages that read or write other collections need
// from the store. Reads go through the planner, so a $lookup on an indexed
// foreign field uses the index; writes go through the store's write paths,
// with their validators, unique indexes and limits.
type Catalog interface {
	// Find returns the documents of db.coll that match filter, a query
	// filter; nil matches every document. A collection that does not
	// exist has no documents.
	Find(ctx context.Context, db, coll string, filter bson.Raw) (Source, error)
	// Aggregate runs pipeline over db.coll, as the sub-pipelines of
	// $lookup and $unionWith do, with the options of the pipeline that
	// runs it and vars bound; coll is "" for a pipeline whose first stage
	// makes its documents.
	Aggregate(ctx context.Context, db, coll string, pipeline []bson.Raw, vars Vars) ([]bson.Raw, error)
	// Out replaces the documents of db.coll with docs, keeping its
	// indexes and options, or fails and leaves it as it was.
	Out(ctx context.Context, db, coll string, docs []bson.Raw) error
	// Merge writes docs into the collection of m as m says.
	Merge(ctx context.Context, m *Merge, docs []MergeDoc) error
}

// Options are the context a pipeline runs in.
type Options struct {
	// Now is $$NOW; the zero time means the time of compilation.
	Now time.Time
	// AllowDiskUse lets the blocking stages write to Scratch what they
	// hold past SortLimit; MemLimit still bounds what stays in memory.
	AllowDiskUse bool
	// Scratch is the request's temporary space on disk; nil keeps every
	// stage in memory, within MemLimit even with AllowDiskUse.
	Scratch *spill.Scratch
	// SortLimit bounds what one blocking stage holds in memory: without
	// AllowDiskUse it fails past it, with it it spills.
	SortLimit int64
	// MemLimit bounds what any stage holds in memory.
	MemLimit int64
	// DB is the database the pipeline runs in, whose collections Catalog
	// reads.
	DB string
	// Catalog reads other collections; nil refuses the stages that do.
	Catalog Catalog
	// Collator is the collation of the aggregation: strings compare under
	// it in the stages that compare them. nil is the simple collation.
	Collator *collation.Collator
}

// Default limits, MongoDB's 100 MiB for a blocking stage and Lethe's own
// bound of a request.
const (
	DefaultSortLimit = 100 << 20
	DefaultMemLimit  = 256 << 20
)

// Pipeline is a compiled pipeline.
type Pipeline struct {
	stages []stage
	opts   Options
}

// stage is one compiled stage.
type stage interface {
	// apply runs the stage over docs, which it may reuse; out bounds the
	// documents it makes.
	apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error)
}

// streamer is a stage that takes its input as it comes rather than all at
// once, such as $group, when it reads a collection.
type streamer interface {
	stream(r *run, src Source) ([]bson.Raw, error)
}

// blocker is a stage that reads all its input before its first output.
type blocker interface {
	blocks()
}

// Compile compiles the stages of a pipeline.
func Compile(stages []bson.Raw, opts Options) (*Pipeline, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.SortLimit == 0 {
		opts.SortLimit = DefaultSortLimit
	}
	if opts.MemLimit == 0 {
		opts.MemLimit = DefaultMemLimit
	}
	c := &compiler{opts: &opts}
	p := &Pipeline{opts: opts}
	for i, raw := range stages {
		c.first = i == 0
		st, err := c.stage(raw)
		if err != nil {
			return nil, err
		}
		p.stages = append(p.stages, st)
	}
	if err := checkWriters(p.stages); err != nil {
		return nil, err
	}
	return p, nil
}

// From is the pipeline of the stages from the i-th on, as when the stages
// before it run elsewhere, such as in the query planner.
func (p *Pipeline) From(i int) *Pipeline {
	return &Pipeline{stages: p.stages[i:], opts: p.opts}
}

// compiler carries what compiling the stages of a pipeline needs.
type compiler struct {
	opts  *Options
	first bool // compiling the first stage
}

// stageCompiler compiles the argument of a stage.
type stageCompiler func(c *compiler, name string, arg bson.RawValue) (stage, error)

// stageCompilers is filled in by init because $facet compiles stages too.
var stageCompilers map[string]stageCompiler

func init() {
	stageCompilers = map[string]stageCompiler{
		"$match":       compileMatch,
		"$sort":        compileSort,
		"$skip":        compileSkip,
		"$limit":       compileLimit,
		"$count":       compileCount,
		"$project":     compileShape,
		"$addFields":   compileShape,
		"$set":         compileShape,
		"$unset":       compileShape,
		"$replaceRoot": compileReplaceRoot,
		"$replaceWith": compileReplaceRoot,
		"$group":       compileGroup,
		"$documents":   compileDocuments,
		"$unwind":      compileUnwind,
		"$facet":       compileFacet,
		"$bucket":      compileBucket,
		"$bucketAuto":  compileBucketAuto,
		"$sortByCount": compileSortByCount,
		"$sample":      compileSample,
		"$redact":      compileRedact,
		"$densify":     compileDensify,
		"$fill":        compileFill,
		"$lookup":      compileLookup,
		"$graphLookup": compileGraphLookup,
		"$unionWith":   compileUnionWith,
		"$out":         compileOut,
		"$merge":       compileMerge,
		// $setWindowFields is package window's, which registers it
		// (RegisterStage).

		"$collStats":         compileMeta,
		"$indexStats":        compileMeta,
		"$currentOp":         compileMeta,
		"$listLocalSessions": compileMeta,
	}
}

// Known reports whether name is a stage the compiler knows, so that a
// caller that checks stages before compiling them (a change stream's) can
// tell an unknown stage (40324) from one it does not allow.
func Known(name string) bool {
	_, ok := stageCompilers[name]
	return ok
}

// StageOf splits a stage document into its name and argument.
func StageOf(raw bson.Raw) (string, bson.RawValue, error) {
	elems, err := raw.Elements()
	if err != nil || len(elems) != 1 {
		return "", bson.RawValue{}, mongoerr.New(mongoerr.Code(40323), "A pipeline stage specification object must contain exactly one field.")
	}
	return elems[0].Key(), elems[0].Value(), nil
}

func (c *compiler) stage(raw bson.Raw) (stage, error) {
	name, arg, err := StageOf(raw)
	if err != nil {
		return nil, err
	}
	compile, ok := stageCompilers[name]
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(40324), "Unrecognized pipeline stage name: '%s'", name)
	}
	return compile(c, name, arg)
}

// Blocks reports whether one of the stages reads all its input before its
// first output, so that the pipeline's source is read to its end before
// the first result.
func (p *Pipeline) Blocks() bool {
	for _, st := range p.stages {
		if _, ok := st.(blocker); ok {
			return true
		}
	}
	return false
}

// run is one run of a pipeline.
type run struct {
	ctx  context.Context
	opts *Options
	// keepSorted asks the run to leave the output of a final $sort that
	// spilled on disk (RunSorted), sorted holds it then.
	keepSorted bool
	sorted     *spill.Sorter
}

// Run passes the documents of src through the stages and returns what the
// last one makes; none of them is too large to send.
func (p *Pipeline) Run(ctx context.Context, src Source) ([]bson.Raw, error) {
	r := &run{ctx: ctx, opts: &p.opts}
	docs, err := r.stages(p.stages, src)
	if err != nil {
		return nil, err
	}
	if err := checkSizes(docs); err != nil {
		return nil, err
	}
	return docs, nil
}

// RunSorted is Run for a caller that reads the output as a cursor reads
// it: when the pipeline ends with a $sort that spilled to disk, the output
// stays in the returned sorter's runs, for the caller to read (Sorter.Iter,
// checking sizes with CheckSize) and to remove with Options.Scratch, and
// docs is nil. So the output of a large sort is held neither whole in
// memory nor against Options.MemLimit, as mongod's $sort hands its output
// to the cursor as it is read.
func (p *Pipeline) RunSorted(ctx context.Context, src Source) (docs []bson.Raw, sorted *spill.Sorter, err error) {
	r := &run{ctx: ctx, opts: &p.opts, keepSorted: true}
	if docs, err = r.stages(p.stages, src); err != nil {
		return nil, nil, err
	}
	if r.sorted != nil {
		return nil, r.sorted, nil
	}
	if err := checkSizes(docs); err != nil {
		return nil, nil, err
	}
	return docs, nil, nil
}

// CheckSize refuses a document of the output too large to return.
func CheckSize(d bson.Raw) error {
	return checkSizes([]bson.Raw{d})
}

// stages runs stages over src.
func (r *run) stages(stages []stage, src Source) ([]bson.Raw, error) {
	// Only the pipeline's own last $sort may stay on disk, not one of a
	// sub-pipeline ($facet) this run also runs.
	keep := r.keepSorted
	r.keepSorted = false
	src, stages, err := r.flow(stages, src, keep)
	if err != nil || r.sorted != nil {
		return nil, err
	}
	var docs []bson.Raw
	if s, ok := first(stages).(streamer); ok {
		docs, err = s.stream(r, src)
		stages = stages[1:]
	} else {
		docs, err = r.collect(src, r.limitBefore(stages))
	}
	if err != nil {
		return nil, err
	}
	for j, st := range stages {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
		if docs, err = st.apply(r, docs, r.limitBefore(stages[j+1:])); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

func first(stages []stage) stage {
	if len(stages) == 0 {
		return nil
	}
	return stages[0]
}

// collect reads src, counting what it holds.
func (r *run) collect(src Source, limit Limit) ([]bson.Raw, error) {
	h := held{limit: limit}
	var all []bson.Raw
	j := 0
	err := src(func(d bson.Raw) error {
		if j++; j%256 == 0 && r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		if err := h.add(len(d)); err != nil {
			return err
		}
		all = append(all, d)
		return nil
	})
	return all, err
}

// blocking is the limit of what a blocking stage holds.
func (r *run) blocking(exceeded func(int64) error) Limit {
	if r.opts.AllowDiskUse {
		return Limit{Bytes: r.opts.MemLimit, Exceeded: QueryExceeded}
	}
	return Limit{Bytes: r.opts.SortLimit, Exceeded: exceeded}
}

// limitBefore is the limit of the documents made for the stages that
// follow: those a $sort will hold count against the sort's limit as they
// are made, the others against the limit of the request.
func (r *run) limitBefore(next []stage) Limit {
	if _, ok := first(next).(*sortStage); ok {
		return r.blocking(SortExceeded)
	}
	return Limit{Bytes: r.opts.MemLimit, Exceeded: QueryExceeded}
}
