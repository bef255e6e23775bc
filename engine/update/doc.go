// Package update applies MongoDB update documents to stored documents: the
// update operators ($set, $inc, $push and the rest, with positional and
// array-filter paths), whole-document replacements, pipelines of $set,
// $unset, $project and $replaceWith stages, and the document an upsert
// inserts.
//
// An operator update compiles into a tree of path components, the shape
// MongoDB gives it: paths that conflict are found once at compile time, and
// applying walks the tree and the document together, so that fields are
// visited, and new fields appended, in MongoDB's order. The document is
// rebuilt from an ordered tree in which only the containers an update reaches
// into are decoded.
package update
