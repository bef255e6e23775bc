// Package pipeline runs the stages of an aggregation pipeline that work on
// documents in memory: the stages after those the query planner takes, the
// stages of sub-pipelines ($facet), and pipelines over documents that come
// from no collection ($documents, $currentOp, $collStats).
//
// A pipeline is compiled once (Compile), which checks every stage the way
// MongoDB parses a pipeline before it reads a document, and then run over a
// Source of raw BSON documents. Stages take the documents of the stage
// before and make their own; blocking stages ($group, $sort, $bucketAuto,
// ...) count what they hold against the limits of Options, and every stage
// stops with the request's context. With allowDiskUse, the blocking stages
// that implement spiller write what passes their limit to the request's
// scratch space (package spill) instead of failing; see flow.go.
//
// Two parts live in packages of their own, to keep this one to a size
// that can be read: package accum, the accumulators that $group, $bucket,
// $bucketAuto and the window functions share, and package window,
// $setWindowFields, which registers itself here (RegisterStage, and
// register.go for what such a stage may use of a run). Package engine
// imports window, so every pipeline it compiles knows the stage.
//
// It is separate from package query, the filter language of find and
// $match, because a filter only answers whether a document matches, while a
// stage makes new documents; and from package expr, the expression language
// the stages evaluate, because expressions work on one document at a time
// while stages work on the stream of them: grouping, sorting, windows.
//
// The package does not know the store. The stages that read other
// collections ($lookup, $unionWith, $graphLookup) or write them ($out,
// $merge) reach them through the Catalog of Options, which package engine
// implements; engine also hands the leading $match, $sort, $skip and $limit
// of a pipeline over a collection (and a $project of fields after them) to
// its planner and runs the rest here. A pipeline runs holding none of the
// engine's locks, so a stage may call the Catalog at any point.
package pipeline
