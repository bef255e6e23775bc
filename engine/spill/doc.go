// Package spill sorts more records than fit in memory: what a request
// holds past its budget is sorted and written to a temporary file, a run,
// and the runs are merged as they are read back. It is the machinery of
// the blocking stages of aggregation ($group, $sort, $bucketAuto, $facet)
// and of the blocking sort of find when the request allows disk use.
//
// Records are opaque bytes, raw BSON documents or what a caller builds
// around them, ordered by a comparison the caller gives. The sort is
// stable: records that compare equal come back in the order they were
// added, which is what lets $group run by sorting on its key and still see
// the documents of one group in their order for $first, $last and $push.
//
// Top is the sort under a limit: it keeps the first k records offered, in
// memory, with the same order and stability. Spool keeps records unsorted,
// in the order they came, to be read back more than once ($facet's input,
// which each of its pipelines reads): in memory within its budget, past it
// in one file written once.
//
// Files live in a Scratch, the temporary space of one request: a directory
// made on the first spill and removed, with everything in it, when the
// request ends. A Scratch bounds the bytes its files hold, and asks a
// check function before each file grows, so that a caller that keeps a
// reserve of free disk (as the engine does) fails the request rather than
// fill the disk. Files are reached through FS, so that tests can run on a
// disk in memory or one that fails.
package spill
