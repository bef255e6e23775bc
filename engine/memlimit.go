package engine

import "github.com/lethedb/lethe/engine/pipeline"

// The memory a find may hold: a sort that no index provides reads every
// match before the first result. Without allowDiskUse it stops at MongoDB's
// 100 MiB (Options.SortMemoryLimit); with it, at Options.QueryMemoryLimit,
// since Lethe never spills to disk. Aggregation counts the same way; see
// package pipeline.

// sortLimitOf is the limit of a find's blocking sort.
func (e *Engine) sortLimitOf(allowDiskUse bool) pipeline.Limit {
	if allowDiskUse {
		return pipeline.Limit{Bytes: e.memLimit, Exceeded: pipeline.QueryExceeded}
	}
	return pipeline.Limit{Bytes: e.sortLimit, Exceeded: pipeline.SortExceeded}
}
