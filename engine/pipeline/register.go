package pipeline

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/collation"
	"github.com/lethedb/lethe/engine/expr"
	"github.com/lethedb/lethe/engine/spill"
)

// The stages of other packages. A stage large enough to be a package of
// its own ($setWindowFields, in package window) imports this one and
// registers its compiler here from its init; package engine imports it, so
// every pipeline the engine and the server compile knows the stage. The
// stages of this package implement the unexported stage interfaces; one of
// another package implements Stage (and BlockingStage or SpillingStage),
// which the compiler adapts to them, so that it runs, flows and spills as
// if it were one of this package's.

// Stage is a compiled stage of another package.
type Stage interface {
	// Apply runs the stage over docs, which it may reuse; out bounds the
	// documents it makes.
	Apply(r *Run, docs []bson.Raw, out Limit) ([]bson.Raw, error)
}

// BlockingStage is a Stage that reads all its input before its first
// output.
type BlockingStage interface {
	Stage
	Blocks()
}

// SpillingStage is a BlockingStage that can spill to disk what it holds
// when the request allows disk use (see flow.go).
type SpillingStage interface {
	BlockingStage
	// Spill reads src to its end, holding at most r.SpillBudget() bytes
	// in memory, and returns the Source of its output.
	Spill(r *Run, src Source) (Source, error)
}

// StageCompiler compiles the argument of the stage name.
type StageCompiler func(c *Compiler, name string, arg bson.RawValue) (Stage, error)

// RegisterStage makes name a stage that compile compiles. It is called
// from the init of the package of the stage; a name registered twice is a
// programming error and panics.
func RegisterStage(name string, compile StageCompiler) {
	if _, ok := stageCompilers[name]; ok {
		panic(fmt.Sprintf("pipeline: stage %s registered twice", name))
	}
	stageCompilers[name] = func(c *compiler, name string, arg bson.RawValue) (stage, error) {
		st, err := compile(&Compiler{c: c}, name, arg)
		if err != nil {
			return nil, err
		}
		return adapt(st), nil
	}
}

// Compiler is the compilation of a pipeline, as a stage of another
// package sees it.
type Compiler struct {
	c *compiler
}

// Expr compiles an expression of the stage, with the pipeline's $$NOW.
func (c *Compiler) Expr(v bson.RawValue) (*expr.Expr, error) {
	return c.c.expr(v)
}

// Collator is the pipeline's collation (Options.Collator): the stage
// compares strings under it. nil is the simple collation.
func (c *Compiler) Collator() *collation.Collator { return c.c.opts.Collator }

// Run is one run of a pipeline, as a stage of another package sees it.
type Run struct {
	r *run
}

// Context is the request's: a stage stops when it ends.
func (r *Run) Context() context.Context { return r.r.ctx }

// MemLimit bounds what any stage holds in memory (Options.MemLimit).
func (r *Run) MemLimit() int64 { return r.r.opts.MemLimit }

// Scratch is the request's temporary space on disk, nil if it has none.
func (r *Run) Scratch() *spill.Scratch { return r.r.opts.Scratch }

// Blocking is the limit of what a blocking stage holds; exceeded is the
// stage's error past it without allowDiskUse.
func (r *Run) Blocking(exceeded func(int64) error) Limit { return r.r.blocking(exceeded) }

// Collect reads src, counting what it holds against limit.
func (r *Run) Collect(src Source, limit Limit) ([]bson.Raw, error) { return r.r.collect(src, limit) }

// SpillBudget is what a spilling stage holds in memory before it writes
// to disk.
func (r *Run) SpillBudget() int64 { return r.r.spillBudget() }

// Held counts the bytes a stage holds against a limit, as the stages of
// this package count theirs.
type Held struct {
	h held
}

// NewHeld counts against limit, starting from n bytes.
func NewHeld(limit Limit, n int64) Held {
	return Held{h: held{n: n, limit: limit}}
}

// Add counts n more bytes, or fewer when n is negative, and fails with the
// limit's error past it.
func (h *Held) Add(n int) error { return h.h.add(n) }

// SizeOf is the bytes of docs.
func SizeOf(docs []bson.Raw) int { return sizeOf(docs) }

// adapt makes a stage of another package one of this package's: a
// blocker if it blocks, a spiller if it spills.
func adapt(st Stage) stage {
	switch s := st.(type) {
	case SpillingStage:
		return spillingOutside{blockingOutside{outside{s}}, s}
	case BlockingStage:
		return blockingOutside{outside{s}}
	}
	return outside{st}
}

// outside is a stage of another package.
type outside struct {
	s Stage
}

func (o outside) apply(r *run, docs []bson.Raw, out Limit) ([]bson.Raw, error) {
	return o.s.Apply(&Run{r: r}, docs, out)
}

// blockingOutside is a BlockingStage.
type blockingOutside struct {
	outside
}

func (blockingOutside) blocks() {}

// spillingOutside is a SpillingStage.
type spillingOutside struct {
	blockingOutside
	s SpillingStage
}

func (o spillingOutside) spill(r *run, src Source) (Source, error) {
	return o.s.Spill(&Run{r: r}, src)
}
