// Package viewdef holds what a view is, apart from the engine that serves
// it: its definition (View), its document in a database's system.views,
// and MongoDB's rules on the graph of views (no cycle through $lookup,
// $graphLookup, $unionWith or $facet, at most MaxDepth views deep). The
// engine keeps the views in memory, serializes their changes and resolves
// reads through them.
package viewdef
