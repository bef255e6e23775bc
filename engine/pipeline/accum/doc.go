// Package accum holds the accumulators of aggregation: $sum, $avg, $push,
// $topN, $percentile and the rest, each the state of one group or one
// window as documents are added to it.
//
// They are a package of their own because three kinds of stage share them:
// $group and its relatives ($bucket, $bucketAuto, $sortByCount) in package
// pipeline, and the window functions of $setWindowFields in package window,
// which runs the same accumulators over each window and adds two of its own
// ($covariancePop, $covarianceSamp). Keeping them apart from the stages
// keeps what a stage may ask of an accumulator to the small interface
// here, and lets window use them without reaching into pipeline.
package accum
