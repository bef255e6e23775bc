package pipeline

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/spill"
)

// Stages that flow take their input as it comes and pass on what they make
// one document at a time, so that what a collection holds reaches a
// spilling stage ($group, $sort, $bucketAuto, $facet) without ever being
// held in memory whole.
// Only the leading stages of a pipeline flow: after the first that neither
// flows nor spills, the documents are collected as before. A $sort that a
// $limit follows flows with or without disk use, holding only what the
// $limit lets through.

// spiller is a blocking stage that can spill to disk what it holds.
type spiller interface {
	// spill reads src to its end, holding at most r.spillBudget bytes in
	// memory, and returns the Source of its output.
	spill(r *run, src Source) (Source, error)
}

// errStop ends a Source early: a $limit has what it needs.
var errStop = errors.New("pipeline: stop reading")

// spills reports whether blocking stages may spill: the request allows
// disk use and has scratch space.
func (r *run) spills() bool {
	return r.opts.AllowDiskUse && r.opts.Scratch != nil
}

// spillBudget is what a spilling stage holds in memory before it writes
// to disk: the limit of a blocking stage, within the request's.
func (r *run) spillBudget() int64 {
	return min(r.opts.SortLimit, r.opts.MemLimit)
}

// flow runs the leading stages that flow or spill over src and returns the
// Source of what they make and the stages left. With keepSorted, a last
// $sort that spills leaves its output in r.sorted, and flow returns no
// Source.
func (r *run) flow(stages []stage, src Source, keepSorted bool) (Source, []stage, error) {
	for len(stages) > 0 {
		switch st := stages[0].(type) {
		case *matchStage, *shapeStage, *replaceRootStage, *unwindStage, *redactStage:
			src = perDoc(r, st, src)
		case *lookupStage:
			// One document at a time, as mongod's $lookup: the pipeline
			// holds what one document joins, not every document joined.
			src = st.flowing(r, src)
		case *skipStage:
			src = skipped(st.n, src)
		case *limitStage:
			src = limited(st.n, src)
		case *sortStage:
			var err error
			switch lim, ok := first(stages[1:]).(*limitStage); {
			case ok:
				src, err = st.top(r, src, lim.n)
			case r.spills() && keepSorted && len(stages) == 1:
				var sorter *spill.Sorter
				if sorter, err = st.sortAll(r, src); err == nil && sorter.Spilled() {
					r.sorted = sorter
					return nil, nil, nil
				}
				src = sortedSource(r, sorter)
			case r.spills():
				src, err = st.spill(r, src)
			default:
				return src, stages, nil
			}
			if err != nil {
				return nil, nil, err
			}
		case spiller:
			if !r.spills() {
				return src, stages, nil
			}
			var err error
			if src, err = st.spill(r, src); err != nil {
				return nil, nil, err
			}
		default:
			return src, stages, nil
		}
		stages = stages[1:]
	}
	return src, stages, nil
}

// perDoc is the Source of a stage that makes its output of each document
// alone, applied to the documents of src one at a time.
func perDoc(r *run, st stage, src Source) Source {
	out := Limit{Bytes: r.opts.MemLimit, Exceeded: QueryExceeded}
	return func(fn func(bson.Raw) error) error {
		one := make([]bson.Raw, 1)
		return src(func(d bson.Raw) error {
			one[0] = d
			docs, err := st.apply(r, one[:1], out)
			if err != nil {
				return err
			}
			for _, d := range docs {
				if err := fn(d); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// skipped is src without its first n documents.
func skipped(n int64, src Source) Source {
	return func(fn func(bson.Raw) error) error {
		left := n
		return src(func(d bson.Raw) error {
			if left > 0 {
				left--
				return nil
			}
			return fn(d)
		})
	}
}

// limited is the first n documents of src, which it stops reading then.
func limited(n int64, src Source) Source {
	return func(fn func(bson.Raw) error) error {
		left := n
		err := src(func(d bson.Raw) error {
			if left == 0 {
				return errStop
			}
			left--
			if err := fn(d); err != nil {
				return err
			}
			if left == 0 {
				return errStop
			}
			return nil
		})
		if err == errStop {
			return nil
		}
		return err
	}
}
