// Package project applies the projection of a find command to the documents
// it returns: inclusions and exclusions of fields and dotted paths, computed
// fields (any aggregation expression, evaluated by package query), and the
// find-only operators $slice, $elemMatch and the positional "a.$". The
// projecting stages of a pipeline, $project, $addFields (or $set) and
// $unset, are projections too.
//
// A projection compiles into a tree of path components, checked once for the
// errors MongoDB reports (mixing inclusion and exclusion, colliding paths,
// misplaced operators). Applying it builds the output document in one pass
// over the input: included fields keep the document's order, and computed
// fields follow them in the projection's order, as in MongoDB.
package project
