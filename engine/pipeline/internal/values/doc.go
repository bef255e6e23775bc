// Package values holds the helpers on BSON values that the stages of
// package pipeline, the accumulators of package accum and the window
// functions of package window share: numbers and their sums, nulls, arrays,
// setting a path in a document, adding to dates. They lived in package
// pipeline until accum and window moved out of it, and are internal so that
// they stay the aggregation packages' own rather than a second bsonvalue.
package values
